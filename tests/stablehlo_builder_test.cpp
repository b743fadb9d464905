// StableHLO builder: result type inference per op, rejection of bad operands (BuildError naming
// the op and the operand types), constant printing, and deterministic golden text.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "stablehlo/ops.h"

namespace xlacel::stablehlo {
namespace {

TensorType f32(std::vector<int64_t> shape) {
  return {ElementType::kF32, std::move(shape)};
}
TensorType bf16(std::vector<int64_t> shape) {
  return {ElementType::kBF16, std::move(shape)};
}
TensorType i32(std::vector<int64_t> shape) {
  return {ElementType::kI32, std::move(shape)};
}
TensorType i1(std::vector<int64_t> shape) {
  return {ElementType::kI1, std::move(shape)};
}

// Expects a BuildError whose message contains every needle (the op name, the types...).
template <typename Fn>
void expect_build_error(Fn&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no BuildError; expected one containing '" << needles.front() << "'";
  } catch (const BuildError& e) {
    std::string message = e.what();
    for (const std::string& needle : needles) {
      EXPECT_NE(message.find(needle), std::string::npos)
          << "message '" << message << "' lacks '" << needle << "'";
    }
  }
}

// The text of the last op of a finished function (its line before func.return, without the
// "%N = " result name).
std::string last_op_line(const Function& f) {
  std::string text = print_function(f);
  size_t end = text.rfind("\n  \"func.return\"");
  size_t begin = text.rfind('\n', end - 1) + 1;
  std::string line = text.substr(begin, end - begin);
  return line.substr(line.find(" = ") + 3);
}

TEST(StablehloTypes, PrintsLikeMlir) {
  EXPECT_EQ(f32({2, 3}).str(), "tensor<2x3xf32>");
  EXPECT_EQ(i1({}).str(), "tensor<i1>");
  EXPECT_EQ(TensorType(ElementType::kUI32, {0, 5}).str(), "tensor<0x5xui32>");
  EXPECT_EQ(f32({2, 3}).num_elements(), 6);
  expect_build_error([] { f32({2, -1}); }, {"negative dimension", "[2, -1]"});
}

TEST(StablehloInference, Elementwise) {
  Function f("f");
  Value a = f.argument("a", f32({2, 3}));
  Value b = f.argument("b", f32({2, 3}));
  Value n = f.argument("n", i32({4}));
  Value p = f.argument("p", i1({2, 3}));
  for (Value v : {add(a, b),    subtract(a, b), multiply(a, b),
                  divide(a, b), maximum(a, b),  minimum(a, b),
                  power(a, b),  negate(a),      exponential(a),
                  log(a),       rsqrt(a),       sqrt(a),
                  tanh(a),      logistic(a),    sine(a),
                  cosine(a),    a + b,          a - b,
                  a * b,        a / b,          -a}) {
    EXPECT_EQ(v.type(), f32({2, 3}));
  }
  EXPECT_EQ(add(n, n).type(), i32({4}));
  EXPECT_EQ(remainder(n, n).type(), i32({4}));
  EXPECT_EQ(compare(a, b, Direction::kLT).type(), i1({2, 3}));
  EXPECT_EQ(compare(n, n, Direction::kGE, CompareType::kSigned).type(), i1({4}));
  EXPECT_EQ(select(p, a, b).type(), f32({2, 3}));
  EXPECT_EQ(select(compare(n, n, Direction::kEQ), n, n).type(), i32({4}));
  EXPECT_EQ(convert(a, ElementType::kBF16).type(), bf16({2, 3}));
  EXPECT_EQ(logical_and(p, p).type(), i1({2, 3}));
  EXPECT_EQ(logical_not(n).type(), i32({4}));
  f.finish({logical_not(n)});
  EXPECT_EQ(last_op_line(f), "\"stablehlo.not\"(%n) : (tensor<4xi32>) -> tensor<4xi32>");
}

TEST(StablehloInference, DataMovement) {
  Function f("f");
  Value x = f.argument("x", f32({2, 3, 4}));
  Value i = f.argument("i", i32({}));
  Value ids = f.argument("ids", i32({5, 7}));
  Value table = f.argument("table", f32({10, 4}));
  Value batched = f.argument("batched", i32({2, 5, 1}));
  EXPECT_EQ(reshape(x, {6, 4}).type(), f32({6, 4}));
  EXPECT_EQ(reshape(x, {24}).type(), f32({24}));
  EXPECT_EQ(broadcast_in_dim(x, {5, 2, 3, 4}, {1, 2, 3}).type(), f32({5, 2, 3, 4}));
  EXPECT_EQ(broadcast_in_dim(reshape(x, {2, 12}), {2, 12, 3}, {0, 1}).type(), f32({2, 12, 3}));
  EXPECT_EQ(broadcast_in_dim(slice(x, {0, 0, 0}, {1, 3, 4}), {7, 3, 4}, {0, 1, 2}).type(),
            f32({7, 3, 4}));
  EXPECT_EQ(transpose(x, {2, 0, 1}).type(), f32({4, 2, 3}));
  EXPECT_EQ(slice(x, {0, 1, 0}, {2, 3, 4}, {1, 1, 3}).type(), f32({2, 2, 2}));
  EXPECT_EQ(dynamic_slice(x, {i, i, i}, {1, 3, 2}).type(), f32({1, 3, 2}));
  EXPECT_EQ(dynamic_update_slice(x, slice(x, {0, 0, 0}, {1, 3, 4}), {i, i, i}).type(),
            f32({2, 3, 4}));
  EXPECT_EQ(concatenate({x, x, slice(x, {0, 0, 0}, {2, 3, 1})}, 2).type(), f32({2, 3, 9}));
  EXPECT_EQ(take(table, ids).type(), f32({5, 7, 4}));
  EXPECT_EQ(optimization_barrier(x).type(), f32({2, 3, 4}));
  // Per-row gather of 2-d starts: indices [5, 2] index dims (0, 1) of x, slices of 1x1x4.
  Value starts = reshape(slice(ids, {0, 0}, {5, 2}), {5, 2});
  GatherDimensions d{.offset_dims = {1},
                     .collapsed_slice_dims = {0, 1},
                     .start_index_map = {0, 1},
                     .index_vector_dim = 1};
  EXPECT_EQ(gather(x, starts, d, {1, 1, 4}).type(), f32({5, 4}));
  // Batching dims: x [2, 3, 4], indices [2, 5, 1] batched on dim 0.
  GatherDimensions b{.offset_dims = {2},
                     .collapsed_slice_dims = {1},
                     .operand_batching_dims = {0},
                     .start_indices_batching_dims = {0},
                     .start_index_map = {1},
                     .index_vector_dim = 2};
  EXPECT_EQ(gather(x, batched, b, {1, 1, 4}).type(), f32({2, 5, 4}));
  f.finish({x});
  std::string text = print_function(f);
  EXPECT_NE(text.find("{dimension_numbers = #stablehlo.gather<offset_dims = [1], "
                      "collapsed_slice_dims = [0, 1], start_index_map = [0, 1], "
                      "index_vector_dim = 1>, indices_are_sorted = false, "
                      "slice_sizes = array<i64: 1, 1, 4>}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"stablehlo.optimization_barrier\"(%x) : (tensor<2x3x4xf32>) -> "
                      "tensor<2x3x4xf32>"),
            std::string::npos)
      << text;
}

TEST(StablehloInference, Scatter) {
  Function f("f");
  Value cache = f.argument("cache", f32({4, 2, 8, 3}));   // [slots, heads, capacity, D]
  Value rows = f.argument("rows", i32({2, 2}));           // (slot, position) per row
  Value updates = f.argument("updates", f32({2, 2, 3}));  // [rows, heads, D]
  Value x = f.argument("x", f32({2, 5, 4}));
  Value batched = f.argument("batched", i32({2, 3, 1}));
  Value window = f.argument("window", f32({2, 3, 2}));
  ScatterDimensions d{.update_window_dims = {1, 2},
                      .inserted_window_dims = {0, 2},
                      .scatter_dims_to_operand_dims = {0, 2},
                      .index_vector_dim = 1};
  EXPECT_EQ(scatter_replace(cache, rows, updates, d).type(), f32({4, 2, 8, 3}));
  // Smaller windows than the input, and batching dims: x [2, 5, 4], per-batch rows of 1 index.
  ScatterDimensions b{.update_window_dims = {2},
                      .inserted_window_dims = {1},
                      .input_batching_dims = {0},
                      .scatter_indices_batching_dims = {0},
                      .scatter_dims_to_operand_dims = {1},
                      .index_vector_dim = 2};
  Value added = scatter(x, batched, window, b,
                        [](Block&, Value current, Value update) { return add(current, update); });
  EXPECT_EQ(added.type(), f32({2, 5, 4}));
  f.finish({scatter_replace(cache, rows, updates, d,
                            {.indices_are_sorted = true, .unique_indices = true}),
            added});
  std::string text = print_function(f);
  EXPECT_NE(text.find(R"("stablehlo.scatter"(%cache, %rows, %updates) ({
  ^bb0(%1: tensor<f32>, %2: tensor<f32>):
    "stablehlo.return"(%2) : (tensor<f32>) -> ()
  }) {indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], inserted_window_dims = [0, 2], scatter_dims_to_operand_dims = [0, 2], index_vector_dim = 1>, unique_indices = false} : (tensor<4x2x8x3xf32>, tensor<2x2xi32>, tensor<2x2x3xf32>) -> tensor<4x2x8x3xf32>)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [1], "
                      "input_batching_dims = [0], scatter_indices_batching_dims = [0], "
                      "scatter_dims_to_operand_dims = [1], index_vector_dim = 2>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{indices_are_sorted = true, scatter_dimension_numbers"), std::string::npos);
  EXPECT_NE(text.find("unique_indices = true}"), std::string::npos);
}

TEST(StablehloErrors, Scatter) {
  Function f("f");
  Value cache = f.argument("cache", f32({4, 2, 8, 3}));
  Value rows = f.argument("rows", i32({2, 2}));
  Value updates = f.argument("updates", f32({2, 2, 3}));
  ScatterDimensions d{.update_window_dims = {1, 2},
                      .inserted_window_dims = {0, 2},
                      .scatter_dims_to_operand_dims = {0, 2},
                      .index_vector_dim = 1};
  auto with = [&](auto change) {
    ScatterDimensions changed = d;
    change(changed);
    return changed;
  };
  const std::string types = "tensor<4x2x8x3xf32>, tensor<2x2xi32>, tensor<2x2x3xf32>";
  expect_build_error([&] { scatter_replace(cache, convert(rows, ElementType::kF32), updates, d); },
                     {"stablehlo.scatter", "scatter_indices must be integer"});
  expect_build_error([&] { scatter_replace(cache, rows, convert(updates, ElementType::kBF16), d); },
                     {"stablehlo.scatter", "element type", "tensor<2x2x3xbf16>"});
  expect_build_error(
      [&] {
        scatter_replace(cache, rows, updates, with([](auto& x) { x.inserted_window_dims = {0}; }));
      },
      {"stablehlo.scatter", "cover the input rank", types});
  expect_build_error(
      [&] {
        scatter_replace(cache, rows, updates, with([](auto& x) { x.update_window_dims = {2, 1}; }));
      },
      {"stablehlo.scatter", "update_window_dims must be sorted", "update_window_dims [2, 1]"});
  expect_build_error(
      [&] {
        scatter_replace(cache, rows, updates,
                        with([](auto& x) { x.scatter_dims_to_operand_dims = {0}; }));
      },
      {"stablehlo.scatter", "index vector size"});
  expect_build_error(
      [&] {
        scatter_replace(cache, rows, updates, with([](auto& x) {
                          x.scatter_dims_to_operand_dims = {2, 2};
                        }));
      },
      {"stablehlo.scatter", "repeats"});
  expect_build_error(
      [&] { scatter_replace(cache, rows, updates, with([](auto& x) { x.index_vector_dim = 3; })); },
      {"stablehlo.scatter", "index_vector_dim"});
  expect_build_error(
      [&] {
        Value three_heads = concatenate({updates, slice(updates, {0, 0, 0}, {2, 1, 3})}, 1);
        scatter_replace(cache, rows, three_heads, d);
      },
      {"stablehlo.scatter", "window exceeds"});
  expect_build_error(
      [&] {
        scatter_replace(cache, slice(rows, {0, 0}, {1, 2}), updates, d);
      },
      {"stablehlo.scatter", "scatter dimensions must match"});
  expect_build_error(
      [&] {
        scatter_replace(cache, rows, updates, with([](auto& x) {
                          x.input_batching_dims = {1};
                          x.inserted_window_dims = {0};
                          x.scatter_dims_to_operand_dims = {0};
                        }));
      },
      {"stablehlo.scatter"});
  expect_build_error(
      [&] {
        scatter(cache, rows, updates, d,
                [](Block& body, Value, Value) { return scalar(body, ElementType::kI32, 0); });
      },
      {"stablehlo.scatter", "returns tensor<i32> but must return tensor<f32>"});
  expect_build_error(
      [&] { scatter(cache, rows, updates, d, [&](Block&, Value, Value) { return cache; }); },
      {"stablehlo.scatter", "outside"});
}

TEST(StablehloInference, ReduceAndDot) {
  Function f("f");
  Value x = f.argument("x", f32({2, 3, 4}));
  Value w = f.argument("w", bf16({4, 8}));
  Value h = f.argument("h", bf16({2, 3, 4}));
  EXPECT_EQ(reduce_sum(x, {2}).type(), f32({2, 3}));
  EXPECT_EQ(reduce_max(x, {0, 2}).type(), f32({3}));
  EXPECT_EQ(reduce_sum(x, {0, 1, 2}).type(), f32({}));
  ArgMax am = argmax(x, 1);
  EXPECT_EQ(am.values.type(), f32({2, 4}));
  EXPECT_EQ(am.indices.type(), i32({2, 4}));
  EXPECT_EQ(argmax(x, 2, ElementType::kI64).indices.type(), TensorType(ElementType::kI64, {2, 3}));
  // Attention scores: [b, q, d] x [b, k, d] -> [b, q, k].
  EXPECT_EQ(dot_general(x, x, {{0}, {0}, {2}, {2}}).type(), f32({2, 3, 3}));
  EXPECT_EQ(dot_general(h, w, {{}, {}, {2}, {0}}).type(), bf16({2, 3, 8}));
  Value acc = dot_general(h, w, {{}, {}, {2}, {0}},
                          {.result_element = ElementType::kF32,
                           .precision = {{Precision::kDefault, Precision::kHighest}}});
  EXPECT_EQ(acc.type(), f32({2, 3, 8}));
  f.finish({acc});
  EXPECT_EQ(last_op_line(f),
            "\"stablehlo.dot_general\"(%h, %w) {dot_dimension_numbers = "
            "#stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]>, "
            "precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]} "
            ": (tensor<2x3x4xbf16>, tensor<4x8xbf16>) -> tensor<2x3x8xf32>");
}

TEST(StablehloErrors, ElementwiseOperands) {
  Function f("f");
  Value a = f.argument("a", f32({2}));
  Value b = f.argument("b", f32({3}));
  Value n = f.argument("n", i32({2}));
  Value p = f.argument("p", i1({2}));
  expect_build_error([&] { add(a, b); }, {"stablehlo.add", "tensor<2xf32>", "tensor<3xf32>"});
  expect_build_error([&] { multiply(a, n); }, {"stablehlo.multiply", "tensor<2xi32>"});
  expect_build_error([&] { exponential(n); }, {"stablehlo.exponential", "float", "tensor<2xi32>"});
  expect_build_error([&] { subtract(p, p); }, {"stablehlo.subtract", "tensor<2xi1>"});
  expect_build_error([&] { logical_and(a, a); }, {"stablehlo.and", "tensor<2xf32>"});
  expect_build_error([&] { compare(a, n, Direction::kEQ); },
                     {"stablehlo.compare", "tensor<2xf32>", "tensor<2xi32>"});
  expect_build_error([&] { compare(n, n, Direction::kLT, CompareType::kFloat); },
                     {"stablehlo.compare", "FLOAT", "tensor<2xi32>"});
  expect_build_error([&] { select(n, a, a); }, {"stablehlo.select", "i1", "tensor<2xi32>"});
  expect_build_error([&] { select(p, a, b); }, {"stablehlo.select", "tensor<3xf32>"});
  expect_build_error([&] { add(a, Value()); }, {"stablehlo.add", "empty"});
  Function g("g");
  Value other = g.argument("o", f32({2}));
  expect_build_error([&] { add(a, other); }, {"stablehlo.add", "another block"});
}

TEST(StablehloErrors, ShapesAndDimensions) {
  Function f("f");
  Value x = f.argument("x", f32({2, 3}));
  Value i = f.argument("i", i32({}));
  Value j = f.argument("j", TensorType(ElementType::kI64, {}));
  expect_build_error(
      [&] {
        reshape(x, {4, 2});
      },
      {"stablehlo.reshape", "tensor<2x3xf32>", "tensor<4x2xf32>"});
  expect_build_error(
      [&] {
        broadcast_in_dim(x, {2, 4}, {0, 1});
      },
      {"stablehlo.broadcast_in_dim", "tensor<2x3xf32>", "tensor<2x4xf32>"});
  expect_build_error(
      [&] {
        broadcast_in_dim(x, {2, 3, 4}, {0, 3});
      },
      {"stablehlo.broadcast_in_dim", "out of range", "tensor<2x3xf32>"});
  expect_build_error(
      [&] {
        broadcast_in_dim(x, {2, 3}, {0});
      },
      {"stablehlo.broadcast_in_dim", "one entry per operand dimension"});
  expect_build_error(
      [&] {
        transpose(x, {0, 0});
      },
      {"stablehlo.transpose", "repeats", "tensor<2x3xf32>"});
  expect_build_error([&] { slice(x, {0, 0}, {3, 3}); }, {"stablehlo.slice", "tensor<2x3xf32>"});
  expect_build_error([&] { slice(x, {0, 2}, {2, 1}); }, {"stablehlo.slice", "start 2, limit 1"});
  expect_build_error(
      [&] {
        dynamic_slice(x, {i}, {1, 1});
      },
      {"stablehlo.dynamic_slice", "1 start indices for rank 2"});
  expect_build_error(
      [&] {
        dynamic_slice(x, {i, j}, {1, 1});
      },
      {"stablehlo.dynamic_slice", "tensor<i32>, tensor<i64>"});
  expect_build_error(
      [&] {
        dynamic_slice(x, {i, i}, {1, 4});
      },
      {"stablehlo.dynamic_slice", "tensor<2x3xf32>"});
  expect_build_error(
      [&] {
        dynamic_update_slice(x, convert(x, ElementType::kBF16), {i, i});
      },
      {"stablehlo.dynamic_update_slice", "tensor<2x3xbf16>"});
  expect_build_error(
      [&] {
        concatenate({x, reshape(x, {3, 2})}, 0);
      },
      {"stablehlo.concatenate", "tensor<2x3xf32>, tensor<3x2xf32>"});
  expect_build_error([&] { concatenate({x, x}, 2); }, {"stablehlo.concatenate", "dimension 2"});
  expect_build_error([&] { take(x, convert(x, ElementType::kF32)); },
                     {"stablehlo.gather", "integer", "tensor<2x3xf32>"});
  GatherDimensions bad{.offset_dims = {1},
                       .collapsed_slice_dims = {0},
                       .start_index_map = {0},
                       .index_vector_dim = 1};
  expect_build_error(
      [&] {
        gather(x, reshape(i, {1, 1}), bad, {2, 3});
      },
      {"stablehlo.gather", "slice size 0 or 1", "slice_sizes [2, 3]"});
  expect_build_error(
      [&] {
        gather(x, reshape(i, {1, 1}), bad, {1, 3, 1});
      },
      {"stablehlo.gather", "slice_sizes"});
}

TEST(StablehloErrors, ReduceAndDot) {
  Function f("f");
  Value x = f.argument("x", f32({2, 3}));
  Value n = f.argument("n", i32({2, 3}));
  Value h = f.argument("h", bf16({2, 3}));
  Block& b = f.body();
  Value zero = scalar(b, ElementType::kF32, 0);
  Value izero = scalar(b, ElementType::kI32, 0);
  auto sum_body = [](Block&, std::span<const Value> a) -> std::vector<Value> {
    return {add(a[0], a[1])};
  };
  expect_build_error([&] { reduce({x}, {zero}, {2}, sum_body); },
                     {"stablehlo.reduce", "out of range", "tensor<2x3xf32>"});
  expect_build_error([&] { reduce({x}, {izero}, {1}, sum_body); },
                     {"stablehlo.reduce", "init value #0 must be tensor<f32>", "tensor<i32>"});
  expect_build_error(
      [&] {
        reduce({x, n}, {zero}, {1}, sum_body);
      },
      {"stablehlo.reduce", "2 inputs but 1 init values"});
  expect_build_error(
      [&] {
        reduce({x, reshape(n, {3, 2})}, {zero, izero}, {1}, sum_body);
      },
      {"stablehlo.reduce", "differ in shape"});
  // Body mismatch: returns f32 where the i32 accumulator is expected, or too few values.
  expect_build_error(
      [&] {
        reduce({x, n}, {zero, izero}, {1},
               [](Block&, std::span<const Value> a) -> std::vector<Value> {
                 return {add(a[0], a[2]), add(a[0], a[2])};
               });
      },
      {"stablehlo.reduce", "body returns (tensor<f32>, tensor<f32>)",
       "must return (tensor<f32>, tensor<i32>)"});
  expect_build_error(
      [&] {
        reduce({x}, {zero}, {1},
               [](Block&, std::span<const Value>) -> std::vector<Value> { return {}; });
      },
      {"stablehlo.reduce", "body returns ()"});
  // A body may not capture values from the enclosing function.
  expect_build_error(
      [&] {
        reduce({x}, {zero}, {1}, [&](Block&, std::span<const Value> a) -> std::vector<Value> {
          return {add(a[0], zero)};
        });
      },
      {"stablehlo.add", "another block"});
  expect_build_error([&] { argmax(x, 2); }, {"stablehlo.reduce", "argmax dimension 2"});
  expect_build_error(
      [&] {
        dot_general(x, h, {{}, {}, {1}, {1}});
      },
      {"stablehlo.dot_general", "element types differ", "tensor<2x3xf32>", "tensor<2x3xbf16>"});
  expect_build_error(
      [&] {
        dot_general(x, x, {{}, {}, {1}, {0}});
      },
      {"stablehlo.dot_general", "contracting dimension sizes differ"});
  expect_build_error(
      [&] {
        dot_general(x, x, {{0}, {}, {1}, {1}});
      },
      {"stablehlo.dot_general", "batching dimension counts differ"});
  expect_build_error(
      [&] {
        dot_general(x, x, {{}, {}, {2}, {1}});
      },
      {"stablehlo.dot_general", "out of range", "tensor<2x3xf32>"});
  expect_build_error(
      [&] {
        dot_general(x, x, {{1}, {1}, {1}, {1}});
      },
      {"stablehlo.dot_general", "repeats dimension 1"});
  expect_build_error(
      [&] {
        dot_general(h, h, {{}, {}, {1}, {1}}, {.result_element = ElementType::kI32});
      },
      {"stablehlo.dot_general", "result element type i32", "tensor<2x3xbf16>"});
}

TEST(StablehloErrors, FunctionsAndModules) {
  Module m("m");
  Function& helper = m.add_function("helper", Visibility::kPrivate);
  Value hx = helper.argument("x", f32({2}));
  expect_build_error([&] { helper.argument("x", f32({2})); }, {"duplicate argument name 'x'"});
  expect_build_error([&] { helper.argument("0bad", f32({2})); }, {"bad argument name '0bad'"});
  expect_build_error([&] { m.add_function("helper"); }, {"already has a function @helper"});
  Function& main = m.add_function("main");
  Value x = main.argument("x", f32({2}));
  Value cache = main.argument("cache", f32({3}));
  expect_build_error([&] { call(main.body(), helper, {x}); },
                     {"func.call", "@helper is not finished"});
  expect_build_error([&] { m.to_text(); }, {"@helper is not finished"});
  helper.finish({hx});
  expect_build_error([&] { call(main.body(), helper, {cache}); },
                     {"func.call", "takes (tensor<2xf32>) but was given (tensor<3xf32>)"});
  main.alias_output(cache, 0);
  expect_build_error([&] { main.finish({x}); },
                     {"%cache (tensor<3xf32>) aliases result 0 of another type (tensor<2xf32>)"});
  main.finish({cache});
  EXPECT_TRUE(main.finished());
  Module other("other");
  Function& lonely = other.add_function("lonely");
  Value y = lonely.argument("y", f32({2}));
  lonely.finish(call(lonely.body(), helper, {y}));
  expect_build_error([&] { other.to_text(); },
                     {"func.call", "@lonely calls @helper, which is not in module @other"});
  expect_build_error([&] { lonely.argument("late", f32({2})); }, {"after the first operation"});
}

// stablehlo.if: branches read the enclosing block's values through captures, printed under
// the outer names (no block arguments); both branches return the op's result types.
TEST(StablehloInference, Conditional) {
  Function f("f");
  Value x = f.argument("x", f32({2, 3}));
  Value p = f.argument("p", i1({}));
  auto doubled = [&](Block& branch) -> std::vector<Value> {
    Value inside = branch.capture(x);
    EXPECT_EQ(branch.capture(x), inside);  // one stand-in per captured value
    return {inside + inside};
  };
  auto zeros = [&](Block& branch) -> std::vector<Value> {
    return {constant(branch, f32({2, 3}), 0.0)};
  };
  // A capture may follow the branch's ops; it prints under the outer name all the same.
  auto late = [&](Block& branch) -> std::vector<Value> {
    Value one = constant(branch, f32({2, 3}), 1.0);
    return {one + branch.capture(x)};
  };
  f.finish({conditional(p, doubled, zeros)[0], conditional(p, late, zeros)[0]});
  const std::string text = print_function(f);
  EXPECT_NE(text.find("\"stablehlo.if\"(%p) ({\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\"stablehlo.add\"(%x, %x)"), std::string::npos) << text;
  EXPECT_NE(text.find("\"stablehlo.add\"(%4, %x)"), std::string::npos) << text;
  EXPECT_EQ(text.find("^bb0"), std::string::npos) << text;
  EXPECT_NE(text.find("}) : (tensor<i1>) -> tensor<2x3xf32>"), std::string::npos) << text;
}

// stablehlo.while: the condition and body take the carried values as block arguments and may
// also capture the enclosing block's values, printed under the outer names.
TEST(StablehloInference, WhileLoop) {
  Function f("f");
  Value x = f.argument("x", f32({2, 3}));
  Value step = f.argument("step", f32({2, 3}));
  const std::vector<Value> results =
      counted_loop(4, {x}, [&](Block& body, const std::vector<Value>& carried) {
        EXPECT_EQ(carried.size(), 2u);
        EXPECT_EQ(carried[0].type(), TensorType(ElementType::kI32, {}));
        return std::vector<Value>{carried[1] + body.capture(step)};
      });
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].type(), x.type());
  f.finish(results);
  const std::string text = print_function(f);
  EXPECT_NE(text.find("\"stablehlo.while\"(%1, %x) ({\n"), std::string::npos) << text;
  // The condition compares the counter with the count, captured.
  EXPECT_NE(text.find("\"stablehlo.compare\"(%3, %0)"), std::string::npos) << text;
  EXPECT_NE(text.find("^bb0(%6: tensor<i32>, %7: tensor<2x3xf32>):"), std::string::npos) << text;
  EXPECT_NE(text.find("\"stablehlo.add\"(%7, %step)"), std::string::npos) << text;
  EXPECT_NE(text.find("}) : (tensor<i32>, tensor<2x3xf32>) -> (tensor<i32>, tensor<2x3xf32>)"),
            std::string::npos)
      << text;
}

TEST(StablehloErrors, WhileLoop) {
  Function f("f");
  Value x = f.argument("x", f32({2, 3}));
  auto same = [](Block&, const std::vector<Value>& carried) { return carried; };
  auto wider = [](Block& body, const std::vector<Value>&) {
    return std::vector<Value>{constant(body, f32({2, 4}), 0.0)};
  };
  auto holds = [](Block& block, const std::vector<Value>&) {
    return std::vector<Value>{constant(block, i1({}), 1.0)};
  };
  expect_build_error([&] { while_loop({}, holds, same); }, {"stablehlo.while", "no carried"});
  expect_build_error([&] { counted_loop(constant(f.body(), f32({}), 2.0), {x}, wider); },
                     {"stablehlo.while", "count must be tensor<i32>, not tensor<f32>"});
  expect_build_error(
      [&] { while_loop({x}, same, same); },
      {"stablehlo.while", "condition must return one tensor<i1>", "tensor<2x3xf32>"});
  expect_build_error(
      [&] { while_loop({x}, holds, wider); },
      {"stablehlo.while", "returns (tensor<2x4xf32>) but carries (tensor<2x3xf32>)"});
  Function g("g");
  Value y = g.argument("y", f32({2, 3}));
  expect_build_error(
      [&] {
        while_loop({x}, holds, [&](Block& body, const std::vector<Value>&) {
          return std::vector<Value>{body.capture(y)};
        });
      },
      {"stablehlo.while", "the body captures tensor<2x3xf32> from a block other than the op's"});
}

// arguments_only_foreign_ops_read: the arguments whose every use, in branches too, is an
// operand of a foreign op (a hand-written kernel's dispatch); none returned.
TEST(StablehloForeign, ArgumentsOnlyForeignOpsRead) {
  Function f("f");
  auto vector = [&](const char* name) { return f.argument(name, f32({4})); };
  Value kernel_only = vector("kernel_only"), also_added = vector("also_added");
  Value in_branch = vector("in_branch"), added_in_branch = vector("added_in_branch");
  Value returned = vector("returned");
  vector("unused");
  Value p = f.argument("p", i1({}));
  auto kernel = [](std::vector<Value> operands) {
    return foreign_op("flow.dispatch", std::move(operands), {}, f32({4}));
  };
  Value sum = also_added + kernel({kernel_only, also_added});
  auto then_branch = [&](Block& branch) -> std::vector<Value> {
    return {kernel({branch.capture(in_branch)}) + branch.capture(added_in_branch)};
  };
  auto else_branch = [&](Block& branch) -> std::vector<Value> { return {branch.capture(sum)}; };
  f.finish({conditional(p, then_branch, else_branch)[0], returned});
  EXPECT_EQ(arguments_only_foreign_ops_read(f),
            (std::set<std::string>{"in_branch", "kernel_only", "unused"}));
}

TEST(StablehloErrors, Conditional) {
  Function f("f");
  Value x = f.argument("x", f32({2, 3}));
  Value p = f.argument("p", i1({}));
  auto same = [&](Block& branch) -> std::vector<Value> { return {branch.capture(x)}; };
  auto wider = [&](Block& branch) -> std::vector<Value> {
    return {constant(branch, f32({2, 4}), 0.0)};
  };
  expect_build_error([&] { conditional(x, same, same); },
                     {"stablehlo.if", "predicate must be tensor<i1>", "tensor<2x3xf32>"});
  expect_build_error([&] { conditional(p, same, wider); },
                     {"stablehlo.if", "(tensor<2x3xf32>) and (tensor<2x4xf32>)"});
  // Without a capture, an outer value stays outside the branch.
  expect_build_error(
      [&] {
        conditional(
            p, [&](Block&) -> std::vector<Value> { return {x}; }, same);
      },
      {"stablehlo.return", "another block"});
  Function g("g");
  Value y = g.argument("y", f32({2, 3}));
  expect_build_error([&] { g.body().capture(y); }, {"cannot capture its own value"});
  expect_build_error(
      [&] {
        conditional(
            p, [&](Block& branch) -> std::vector<Value> { return {branch.capture(y)}; }, same);
      },
      {"stablehlo.if", "captures tensor<2x3xf32> from a block other than the op's"});
}

TEST(StablehloConstants, Literals) {
  Function f("f");
  Block& b = f.body();
  // The value attribute of the constant just built.
  auto text = [&](Value) { return b.operations().back().attributes.at("value"); };
  EXPECT_EQ(text(constant(b, f32({2, 3}), 2.5)), "dense<2.5> : tensor<2x3xf32>");
  EXPECT_EQ(text(constant(b, f32({}), 1.0)), "dense<1.0> : tensor<f32>");
  EXPECT_EQ(text(constant(b, f32({}), 1e20)), "dense<1.0000000200408773e+20> : tensor<f32>");
  EXPECT_EQ(text(constant(b, f32({}), 0.1)), "dense<0.10000000149011612> : tensor<f32>");
  EXPECT_EQ(text(constant(b, f32({}), -0.0)), "dense<-0.0> : tensor<f32>");
  EXPECT_EQ(text(constant(b, bf16({4}), -std::numeric_limits<double>::infinity())),
            "dense<0xFF80> : tensor<4xbf16>");
  EXPECT_EQ(text(constant(b, f32({}), std::numeric_limits<double>::quiet_NaN())),
            "dense<0x7FC00000> : tensor<f32>");
  // bf16 rounds to nearest even: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> 1.
  EXPECT_EQ(text(constant(b, bf16({}), 1.00390625)), "dense<1.0> : tensor<bf16>");
  EXPECT_EQ(text(constant(b, bf16({}), 1.01171875)), "dense<1.015625> : tensor<bf16>");
  EXPECT_EQ(text(constant(b, TensorType(ElementType::kF16, {}), 65519.0)),
            "dense<65504.0> : tensor<f16>");
  EXPECT_EQ(text(constant(b, TensorType(ElementType::kF16, {}), 65520.0)),
            "dense<0x7C00> : tensor<f16>");
  EXPECT_EQ(text(constant(b, TensorType(ElementType::kF16, {}), 1e-7)),
            "dense<1.1920928955078125e-07> : tensor<f16>");
  EXPECT_EQ(text(constant(b, f32({2, 2}), std::vector<double>{1, 2, 3, 4.5})),
            "dense<[[1.0, 2.0], [3.0, 4.5]]> : tensor<2x2xf32>");
  EXPECT_EQ(text(constant(b, i1({3}), std::vector<int64_t>{1, 0, 1})),
            "dense<[true, false, true]> : tensor<3xi1>");
  EXPECT_EQ(
      text(constant(b, TensorType(ElementType::kUI32, {2}), std::vector<int64_t>{0, 4294967295})),
      "dense<[0, 4294967295]> : tensor<2xui32>");
  EXPECT_EQ(text(constant(b, i32({0}), std::vector<int64_t>{})), "dense<[]> : tensor<0xi32>");
  std::vector<int64_t> many(300, 0);
  many[0] = 1;
  many[299] = -2;
  std::string hex = text(constant(b, i32({300}), many));
  EXPECT_EQ(hex.substr(0, 17), "dense<\"0x01000000");
  EXPECT_EQ(hex.substr(hex.size() - 28), "FEFFFFFF\"> : tensor<300xi32>");
  expect_build_error([&] { constant(b, i32({}), 0.5); }, {"stablehlo.constant", "tensor<i32>"});
  expect_build_error([&] { constant(b, TensorType(ElementType::kUI8, {}), 256.0); },
                     {"stablehlo.constant", "256 is out of range for tensor<ui8>"});
  expect_build_error([&] { constant(b, f32({2}), std::vector<double>{1}); },
                     {"stablehlo.constant", "1 values for tensor<2xf32>"});
  expect_build_error([&] { iota(b, f32({2}), 1); }, {"stablehlo.iota", "tensor<2xf32>"});
  EXPECT_EQ(iota(b, i32({2, 5}), 1).type(), i32({2, 5}));
}

// The golden module: a private helper, a public entry with named arguments, a donated cache,
// a call, a reduce with its body and a multi-result argmax.
std::string build_golden() {
  Module m("golden");
  Function& scale = m.add_function("scale", Visibility::kPrivate);
  Value x = scale.argument("x", f32({2, 3}));
  scale.finish({x * constant(scale.body(), f32({2, 3}), 0.5)});

  Function& main = m.add_function("decode_step");
  Value tokens = main.argument("tokens", i32({2, 3}));
  Value cache = main.argument("kv_cache", f32({2}));
  main.alias_output(cache, 1);
  Value scaled = call(main.body(), scale, {convert(tokens, ElementType::kF32)}).front();
  main.finish({reduce_max(scaled, {1}), add(cache, reduce_sum(scaled, {1}))});
  return m.to_text();
}

TEST(StablehloPrinter, GoldenText) {
  const std::string expected = R"(module @golden {
  func.func private @scale(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = "stablehlo.constant"() {value = dense<0.5> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %1 = "stablehlo.multiply"(%x, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%1) : (tensor<2x3xf32>) -> ()
  }
  func.func @decode_step(%tokens: tensor<2x3xi32>, %kv_cache: tensor<2xf32> {tf.aliasing_output = 1 : i32}) -> (tensor<2xf32>, tensor<2xf32>) {
    %0 = "stablehlo.convert"(%tokens) : (tensor<2x3xi32>) -> tensor<2x3xf32>
    %1 = "func.call"(%0) {callee = @scale} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %3 = "stablehlo.reduce"(%1, %2) ({
    ^bb0(%4: tensor<f32>, %5: tensor<f32>):
      %6 = "stablehlo.maximum"(%4, %5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%6) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %7 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %8 = "stablehlo.reduce"(%1, %7) ({
    ^bb0(%9: tensor<f32>, %10: tensor<f32>):
      %11 = "stablehlo.add"(%9, %10) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%11) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %12 = "stablehlo.add"(%kv_cache, %8) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%3, %12) : (tensor<2xf32>, tensor<2xf32>) -> ()
  }
}
)";
  std::string text = build_golden();
  EXPECT_EQ(text, expected);
  EXPECT_EQ(build_golden(), text);  // same graph, byte-identical text
}

}  // namespace
}  // namespace xlacel::stablehlo
