// Every StableHLO builder op compiled for real with IREE's iree-compile (llvm-cpu, and CUDA
// compile-only) and executed through IREE's Python runtime against numpy
// (tests/stablehlo/run_modules.py). One small module per op case, compiled two at a time.
// Skips (with the reason) when the project venv lacks iree-compile or iree.runtime;
// XLACEL_VENV overrides the venv (default: <source>/.venv).
//
// StablehloXla: the same per-op modules (each with one public @main, as XLA requires) compiled
// and run by XLA's CPU client from jax/jaxlib (run_modules.py's "xla" runtime) against the same
// numpy references and tolerances. Skips when the venv cannot import jax.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <thread>

#include "stablehlo/ops.h"
#include "test_paths.h"

namespace xlacel::stablehlo {
namespace {

namespace fs = std::filesystem;
using Args = std::vector<Value>;
using Results = std::vector<Value>;

TensorType F(std::vector<int64_t> shape) {
  return {ElementType::kF32, std::move(shape)};
}
TensorType BF(std::vector<int64_t> shape) {
  return {ElementType::kBF16, std::move(shape)};
}
TensorType H(std::vector<int64_t> shape) {
  return {ElementType::kF16, std::move(shape)};
}
TensorType I(std::vector<int64_t> shape) {
  return {ElementType::kI32, std::move(shape)};
}
TensorType U(std::vector<int64_t> shape) {
  return {ElementType::kUI32, std::move(shape)};
}
TensorType B(std::vector<int64_t> shape) {
  return {ElementType::kI1, std::move(shape)};
}

struct OpCase {
  std::string op;
  std::vector<std::pair<TensorType, std::string>> inputs;  // type, numpy expression
  std::string reference;                                   // Python code setting `out`
  double rtol = 0;                                         // 0 and 0: exact
  double atol = 0;
  std::function<Results(Module&, Function&, const Args&)> build;
};

constexpr double kTranscendentalRtol = 2e-6;
constexpr double kTranscendentalAtol = 1e-6;

std::string uniform(double lo, double hi, const std::vector<int64_t>& shape) {
  return fmt::format("rng.uniform({}, {}, ({},))", lo, hi, fmt::join(shape, ", "));
}

OpCase binary_case(std::string op, std::function<Value(Value, Value)> fn, std::string numpy,
                   double lo = -3, double hi = 3) {
  return {op,
          {{F({2, 3}), uniform(lo, hi, {2, 3})}, {F({2, 3}), uniform(-2, 2, {2, 3})}},
          "out = " + numpy,
          0,
          0,
          [fn](Module&, Function&, const Args& x) -> Results { return {fn(x[0], x[1])}; }};
}

OpCase unary_case(std::string op, std::function<Value(Value)> fn, std::string numpy, double lo,
                  double hi) {
  return {op,
          {{F({3, 5}), uniform(lo, hi, {3, 5})}},
          "x = x0.astype(np.float64)\nout = " + numpy,
          kTranscendentalRtol,
          kTranscendentalAtol,
          [fn](Module&, Function&, const Args& x) -> Results { return {fn(x[0])}; }};
}

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  const double inf = std::numeric_limits<double>::infinity();

  cases.push_back({"constant_splat",
                   {},
                   "out = (np.full((2, 3), 2.5, np.float32), np.full(4, -np.inf, bf16), "
                   "np.full(3, 7, np.int32), np.full(2, 0.1, np.float16), np.full((), True))",
                   0,
                   0,
                   [inf](Module&, Function& f, const Args&) -> Results {
                     Block& b = f.body();
                     return {constant(b, F({2, 3}), 2.5), constant(b, BF({4}), -inf),
                             constant(b, I({3}), 7), constant(b, H({2}), 0.1),
                             constant(b, B({}), 1)};
                   }});
  cases.push_back(
      {"constant_dense",
       {},
       "out = (np.array([[1.5, -0.0, 0.1], [1e-30, 3e38, -7]], np.float32),\n"
       "       np.array([True, False, True]), np.array([0, 4294967295], np.uint32),\n"
       "       np.array([-(1 << 40), 1 << 40], np.int64),\n"
       "       np.array([[1, 0.1], [-3.5, np.inf]], np.float32).astype(bf16))",
       0,
       0,
       [inf](Module&, Function& f, const Args&) -> Results {
         Block& b = f.body();
         return {constant(b, F({2, 3}), std::vector<double>{1.5, -0.0, 0.1, 1e-30, 3e38, -7}),
                 constant(b, B({3}), std::vector<int64_t>{1, 0, 1}),
                 constant(b, U({2}), std::vector<int64_t>{0, 4294967295}),
                 constant(b, TensorType(ElementType::kI64, {2}),
                          std::vector<int64_t>{-(int64_t{1} << 40), int64_t{1} << 40}),
                 constant(b, BF({2, 2}), std::vector<double>{1, 0.1, -3.5, inf})};
       }});
  cases.push_back({"constant_hex",
                   {},
                   "out = ((np.arange(300) * 0.37 - 50).astype(np.float32),\n"
                   "       ((np.arange(320) % 37) * 0.3 - 9).astype(np.float32).astype(bf16)"
                   ".reshape(20, 16),\n"
                   "       (np.arange(300) ** 2 - 1000).astype(np.int32))",
                   0,
                   0,
                   [](Module&, Function& f, const Args&) -> Results {
                     std::vector<double> a, b;
                     std::vector<int64_t> c;
                     for (int i = 0; i < 300; ++i) a.push_back(i * 0.37 - 50);
                     for (int i = 0; i < 320; ++i) b.push_back((i % 37) * 0.3 - 9);
                     for (int64_t i = 0; i < 300; ++i) c.push_back(i * i - 1000);
                     return {constant(f.body(), F({300}), a), constant(f.body(), BF({20, 16}), b),
                             constant(f.body(), I({300}), c)};
                   }});
  cases.push_back({"iota",
                   {},
                   "out = (np.broadcast_to(np.arange(4), (3, 4)),\n"
                   "       np.broadcast_to(np.arange(2.0)[:, None], (2, 3)))",
                   0,
                   0,
                   [](Module&, Function& f, const Args&) -> Results {
                     return {iota(f.body(), I({3, 4}), 1), iota(f.body(), F({2, 3}), 0)};
                   }});
  cases.push_back({"convert",
                   {{F({2, 4}), "[[-2.7, -1.5, -0.5, 0.0], [0.49, 1.5, 2.5, 1e3]]"},
                    {I({5}), "rng.integers(-1000, 1000, 5)"},
                    {BF({3}), "[1.5, -2.25, 3e5]"}},
                   "out = (np.trunc(x0).astype(np.int32), x0.astype(bf16), x0 != 0,\n"
                   "       x1.astype(np.float32), x2.astype(np.float32))",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {convert(x[0], ElementType::kI32), convert(x[0], ElementType::kBF16),
                             convert(x[0], ElementType::kI1), convert(x[1], ElementType::kF32),
                             convert(x[2], ElementType::kF32)};
                   }});
  cases.push_back({"reshape",
                   {{F({2, 3, 4}), "np.arange(24).reshape(2, 3, 4)"}},
                   "out = x0.reshape(4, 6)",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {reshape(x[0], {4, 6})};
                   }});
  cases.push_back(
      {"broadcast_in_dim",
       {{F({3, 1}), uniform(-1, 1, {3, 1})}, {F({}), "np.array(4.5)"}},
       "out = (np.broadcast_to(x0[None], (2, 3, 4)), np.full((2, 2), x1))",
       0,
       0,
       [](Module&, Function&, const Args& x) -> Results {
         return {broadcast_in_dim(x[0], {2, 3, 4}, {1, 2}), broadcast_in_dim(x[1], {2, 2}, {})};
       }});
  cases.push_back({"transpose",
                   {{F({2, 3, 4}), uniform(-1, 1, {2, 3, 4})}},
                   "out = np.transpose(x0, (2, 0, 1))",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {transpose(x[0], {2, 0, 1})};
                   }});
  cases.push_back({"slice",
                   {{F({5, 6}), uniform(-1, 1, {5, 6})}},
                   "out = (x0[1:5:2, 0:6:3], x0[2:3, 1:5])",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {slice(x[0], {1, 0}, {5, 6}, {2, 3}), slice(x[0], {2, 1}, {3, 5})};
                   }});
  cases.push_back({"dynamic_slice",
                   {{F({4, 6}), uniform(-1, 1, {4, 6})},
                    {I({}), "np.array(1)"},
                    {I({}), "np.array(5)"},
                    {I({}), "np.array(-3)"}},
                   "out = (x0[1:3, 3:6], x0[0:4, 1:2])  # starts clamp into range",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {dynamic_slice(x[0], {x[1], x[2]}, {2, 3}),
                             dynamic_slice(x[0], {x[3], x[1]}, {4, 1})};
                   }});
  cases.push_back({"dynamic_update_slice",
                   {{F({4, 6}), uniform(-1, 1, {4, 6})},
                    {F({2, 2}), uniform(5, 6, {2, 2})},
                    {I({}), "np.array(3)"},
                    {I({}), "np.array(1)"}},
                   "out = x0.copy()\nout[2:4, 1:3] = x1  # row start 3 clamps to 2",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {dynamic_update_slice(x[0], x[1], {x[2], x[3]})};
                   }});
  cases.push_back({"concatenate",
                   {{F({2, 3}), uniform(-1, 1, {2, 3})},
                    {F({2, 1}), uniform(-1, 1, {2, 1})},
                    {F({2, 2}), uniform(-1, 1, {2, 2})},
                    {I({2}), "[1, 2]"},
                    {I({3}), "[3, 4, 5]"}},
                   "out = (np.concatenate([x0, x1, x2], 1), np.concatenate([x3, x4]))",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {concatenate({x[0], x[1], x[2]}, 1), concatenate({x[3], x[4]}, 0)};
                   }});
  cases.push_back({"gather",
                   {{F({10, 4}), uniform(-1, 1, {10, 4})},
                    {I({2, 3}), "[[0, 9, 3], [12, 3, 5]]"},
                    {F({3, 4, 5}), uniform(-1, 1, {3, 4, 5})},
                    {I({2, 2}), "[[1, 0], [2, 3]]"}},
                   "out = (np.take(x0, np.clip(x1, 0, 9), axis=0),  # take clamps like gather\n"
                   "       np.stack([x2[1, :, 0:2], x2[2, :, 3:5]]))",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     GatherDimensions d{.offset_dims = {1, 2},
                                        .collapsed_slice_dims = {0},
                                        .start_index_map = {0, 2},
                                        .index_vector_dim = 1};
                     return {take(x[0], x[1]), gather(x[2], x[3], d, {1, 4, 2})};
                   }});
  cases.push_back({"optimization_barrier",
                   {{F({2, 3}), uniform(-1, 1, {2, 3})}, {I({4}), "[1, -2, 3, 7]"}},
                   "out = (x0 + x0, x1)",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {optimization_barrier(x[0] + x[0]), optimization_barrier(x[1])};
                   }});
  cases.push_back(
      {"gather_batching",
       {{F({2, 3, 4}), uniform(-1, 1, {2, 3, 4})}, {I({2, 5, 1}), "rng.integers(0, 3, (2, 5, 1))"}},
       "out = np.stack([x0[b][x1[b, :, 0]] for b in range(2)])",
       0,
       0,
       [](Module&, Function&, const Args& x) -> Results {
         GatherDimensions d{.offset_dims = {2},
                            .collapsed_slice_dims = {1},
                            .operand_batching_dims = {0},
                            .start_indices_batching_dims = {0},
                            .start_index_map = {1},
                            .index_vector_dim = 2};
         return {gather(x[0], x[1], d, {1, 1, 4})};
       }});
  // A replacing scatter of [D] rows at (slot, head, position) triples (the KV-cache write of
  // the decode graphs; x1 is unsorted), and an adding one with batching dims and repeated
  // indices.
  cases.push_back({"scatter",
                   {{F({3, 2, 5, 4}), uniform(-1, 1, {3, 2, 5, 4})},
                    {I({2, 2, 3}), "[[[2, 0, 4], [2, 1, 4]], [[0, 0, 1], [0, 1, 1]]]"},
                    {F({2, 2, 4}), uniform(5, 6, {2, 2, 4})}},
                   "out = x0.copy()\n"
                   "for b in range(2):\n"
                   "    for h in range(2):\n"
                   "        out[tuple(x1[b, h])] = x2[b, h]",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     ScatterDimensions d{.update_window_dims = {2},
                                         .inserted_window_dims = {0, 1, 2},
                                         .scatter_dims_to_operand_dims = {0, 1, 2},
                                         .index_vector_dim = 2};
                     return {scatter_replace(x[0], x[1], x[2], d)};
                   }});
  cases.push_back({"scatter_add_batching",
                   {{F({2, 5, 4}), uniform(-1, 1, {2, 5, 4})},
                    {I({2, 3, 1}), "[[[0], [3], [3]], [[4], [1], [0]]]"},
                    {F({2, 3, 4}), uniform(-1, 1, {2, 3, 4})}},
                   "out = x0.astype(np.float64)\n"
                   "for b in range(2):\n"
                   "    for i in range(3):\n"
                   "        out[b, x1[b, i, 0]] += x2[b, i]",
                   1e-6,
                   1e-6,
                   [](Module&, Function&, const Args& x) -> Results {
                     ScatterDimensions d{.update_window_dims = {2},
                                         .inserted_window_dims = {1},
                                         .input_batching_dims = {0},
                                         .scatter_indices_batching_dims = {0},
                                         .scatter_dims_to_operand_dims = {1},
                                         .index_vector_dim = 2};
                     return {scatter(x[0], x[1], x[2], d, [](Block&, Value current, Value update) {
                       return add(current, update);
                     })};
                   }});
  cases.push_back({"select",
                   {{B({2, 3}), "rng.uniform(size=(2, 3)) < 0.5"},
                    {F({2, 3}), uniform(-1, 1, {2, 3})},
                    {F({2, 3}), uniform(-1, 1, {2, 3})},
                    {B({}), "np.array(False)"}},
                   "out = (np.where(x0, x1, x2), x1 if x3 else x2)",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {select(x[0], x[1], x[2]), select(x[3], x[1], x[2])};
                   }});
  cases.push_back(
      {"compare",
       {{F({6}), "[1, 2, np.nan, -0.0, 3, np.inf]"},
        {F({6}), "[1, 3, 1, 0.0, 2, np.inf]"},
        {U({3}), "[0, 4294967295, 5]"},
        {U({3}), "[1, 1, 5]"},
        {I({3}), "[-1, 2, 3]"},
        {I({3}), "[1, 2, -3]"}},
       "out = (x0 == x1, x0 != x1, x0 < x1, x0 <= x1, x0 > x1, x0 >= x1, x2 < x3, x4 >= x5)",
       0,
       0,
       [](Module&, Function&, const Args& x) -> Results {
         return {compare(x[0], x[1], Direction::kEQ), compare(x[0], x[1], Direction::kNE),
                 compare(x[0], x[1], Direction::kLT), compare(x[0], x[1], Direction::kLE),
                 compare(x[0], x[1], Direction::kGT), compare(x[0], x[1], Direction::kGE),
                 compare(x[2], x[3], Direction::kLT), compare(x[4], x[5], Direction::kGE)};
       }});
  cases.push_back({"compare_totalorder",
                   {{F({4}), "[-0.0, 0.0, np.nan, 1]"}, {F({4}), "[0.0, -0.0, 1, np.nan]"}},
                   "out = np.array([True, False, False, True])",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {compare(x[0], x[1], Direction::kLT, CompareType::kTotalOrder)};
                   }});
  cases.push_back(binary_case("add", add, "x0 + x1"));
  cases.push_back(binary_case("subtract", subtract, "x0 - x1"));
  cases.push_back(binary_case("multiply", multiply, "x0 * x1"));
  cases.push_back(binary_case("divide", divide, "x0 / x1"));
  cases.push_back(binary_case("maximum", maximum, "np.maximum(x0, x1)"));
  cases.push_back(binary_case("minimum", minimum, "np.minimum(x0, x1)"));
  cases.push_back(binary_case("power", power,
                              "np.power(x0.astype(np.float64), x1.astype(np.float64))", 0.5, 2));
  cases.back().rtol = kTranscendentalRtol;
  cases.back().atol = kTranscendentalAtol;
  // NaN propagation and integer forms.
  cases.push_back({"maximum_minimum_nan",
                   {{F({3}), "[np.nan, 1, -0.5]"}, {F({3}), "[1, np.nan, 2]"}},
                   "out = (np.maximum(x0, x1), np.minimum(x0, x1))",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {maximum(x[0], x[1]), minimum(x[0], x[1])};
                   }});
  cases.push_back({"integer_arithmetic",
                   {{I({6}), "[7, -7, 7, -7, 100, 0]"}, {I({6}), "[2, 2, -2, -2, 7, 5]"}},
                   "out = (x0 + x1, x0 - x1, x0 * x1, np.fix(x0 / x1).astype(np.int32),\n"
                   "       np.maximum(x0, x1), np.minimum(x0, x1), -x0)",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {add(x[0], x[1]),    subtract(x[0], x[1]), multiply(x[0], x[1]),
                             divide(x[0], x[1]), maximum(x[0], x[1]),  minimum(x[0], x[1]),
                             negate(x[0])};
                   }});
  cases.push_back({"logical",
                   {{B({4}), "[True, True, False, False]"},
                    {B({4}), "[True, False, True, False]"},
                    {I({2}), "[12, -1]"},
                    {I({2}), "[10, 6]"}},
                   "out = (x0 & x1, x0 | x1, ~x0, x2 & x3, x2 | x3, ~x2)",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {logical_and(x[0], x[1]), logical_or(x[0], x[1]), logical_not(x[0]),
                             logical_and(x[2], x[3]), logical_or(x[2], x[3]), logical_not(x[2])};
                   }});
  cases.push_back(unary_case("negate", negate, "-x", -3, 3));
  cases.push_back(unary_case("exponential", exponential, "np.exp(x)", -5, 5));
  cases.push_back(unary_case("log", log, "np.log(x)", 0.01, 10));
  cases.push_back(unary_case("rsqrt", rsqrt, "1 / np.sqrt(x)", 0.01, 10));
  cases.push_back(unary_case("sqrt", sqrt, "np.sqrt(x)", 0, 10));
  cases.push_back(unary_case("tanh", tanh, "np.tanh(x)", -5, 5));
  cases.push_back(unary_case("logistic", logistic, "1 / (1 + np.exp(-x))", -8, 8));
  cases.push_back(unary_case("sine", sine, "np.sin(x)", -10, 10));
  cases.push_back(unary_case("cosine", cosine, "np.cos(x)", -10, 10));
  cases.push_back(
      {"exponential_bf16",
       {{BF({8}), uniform(-3, 3, {8})}},
       "out = np.exp(x0.astype(np.float64))",
       1e-2,
       0,
       [](Module&, Function&, const Args& x) -> Results { return {exponential(x[0])}; }});
  cases.push_back(
      {"reduce_sum",
       {{F({4, 5}), uniform(-1, 1, {4, 5})}, {I({3, 4}), "rng.integers(-100, 100, (3, 4))"}},
       "out = (x0.astype(np.float64).sum(1), x1.sum())",
       1e-6,
       1e-6,
       [](Module&, Function&, const Args& x) -> Results {
         return {reduce_sum(x[0], {1}), reduce_sum(x[1], {0, 1})};
       }});
  cases.push_back(
      {"reduce_max",
       {{F({4, 5}), uniform(-1, 1, {4, 5})}, {I({3, 4}), "rng.integers(-100, 100, (3, 4))"}},
       "out = (x0.max(0), x1.max(1))",
       0,
       0,
       [](Module&, Function&, const Args& x) -> Results {
         return {reduce_max(x[0], {0}), reduce_max(x[1], {1})};
       }});
  cases.push_back({"argmax",
                   {{F({5, 6}),
                     "[[1, 3, 3, 0, 3, 2], [2, 2, 2, 2, 2, 2], [1, np.nan, 5, np.nan, 0, 0],\n"
                     " [-np.inf] * 6, [0.5, -1, 7, 6.5, 7, 7]]"},
                    {I({3, 4}), "[[1, 5, 0, 2], [4, 5, 0, 2], [4, 1, 0, 2]]"},
                    {F({2, 1000}), "np.floor(rng.uniform(0, 6, (2, 1000)))"}},
                   "out = (x0.max(1), x0.argmax(1).astype(np.int32), x1.max(0),\n"
                   "       x1.argmax(0).astype(np.int32), x2.argmax(1).astype(np.int32))",
                   0,
                   0,
                   [](Module&, Function&, const Args& x) -> Results {
                     ArgMax a = argmax(x[0], 1);
                     ArgMax b = argmax(x[1], 0);
                     return {a.values, a.indices, b.values, b.indices, argmax(x[2], 1).indices};
                   }});
  cases.push_back({"reduce_variadic",
                   {{F({3, 4}), uniform(-1, 1, {3, 4})}, {F({3, 4}), uniform(-1, 1, {3, 4})}},
                   "out = (x0.min(1), x1.max(1))",
                   0,
                   0,
                   [inf](Module&, Function& f, const Args& x) -> Results {
                     return reduce({x[0], x[1]},
                                   {scalar(f.body(), ElementType::kF32, inf),
                                    scalar(f.body(), ElementType::kF32, -inf)},
                                   {1}, [](Block&, std::span<const Value> a) -> Results {
                                     return {minimum(a[0], a[2]), maximum(a[1], a[3])};
                                   });
                   }});
  // Each branch reads x0 through a capture; the first if takes its then branch, the second its
  // else branch.
  cases.push_back(
      {"conditional",
       {{F({3, 4}), uniform(-1, 1, {3, 4})}, {F({}), "1.5"}},
       "out = (x0 * x0, x0 - x1)",
       0,
       0,
       [](Module&, Function& f, const Args& x) -> Results {
         Value zero = scalar(f.body(), ElementType::kF32, 0);
         auto square = [&](Block& branch) -> Results {
           Value y = branch.capture(x[0]);
           return {y * y};
         };
         auto minus = [&](Block& branch) -> Results {
           return {branch.capture(x[0]) - broadcast_in_dim(branch.capture(x[1]), {3, 4}, {})};
         };
         return {conditional(compare(x[1], zero, Direction::kGT), square, minus)[0],
                 conditional(compare(x[1], zero, Direction::kLT), square, minus)[0]};
       }});
  // Counted loops carry an accumulator and read x1 through a capture: three times, and x2 times
  // (a count the graph reads: 2).
  cases.push_back(
      {"while_loop",
       {{F({3, 4}), uniform(-1, 1, {3, 4})},
        {F({3, 4}), uniform(-1, 1, {3, 4})},
        {I({}), "np.array(2)"}},
       "out = (x0 + x1 + x1 + x1, x0 + x1 + x1)",
       1e-6,
       1e-6,
       [](Module&, Function&, const Args& x) -> Results {
         auto add_x1 = [&](Block& body, const Results& carried) {
           return Results{carried[1] + body.capture(x[1])};
         };
         return {counted_loop(3, {x[0]}, add_x1)[0], counted_loop(x[2], {x[0]}, add_x1)[0]};
       }});
  cases.push_back({"dot_general",
                   {{F({3, 4}), uniform(-1, 1, {3, 4})},
                    {F({4, 5}), uniform(-1, 1, {4, 5})},
                    {F({2, 3, 4}), uniform(-1, 1, {2, 3, 4})},
                    {F({2, 5, 4}), uniform(-1, 1, {2, 5, 4})}},
                   "a = [x.astype(np.float64) for x in (x0, x1, x2, x3)]\n"
                   "out = (a[0] @ a[1], np.einsum('bqd,bkd->bqk', a[2], a[3]))",
                   1e-5,
                   1e-6,
                   [](Module&, Function&, const Args& x) -> Results {
                     return {
                         dot_general(x[0], x[1], {.lhs_contracting = {1}, .rhs_contracting = {0}}),
                         dot_general(x[2], x[3], {{0}, {0}, {2}, {2}},
                                     {.precision = {{Precision::kHighest, Precision::kHighest}}})};
                   }});
  // f32 accumulation of bf16/f16 operands: bf16 accumulation over 256 terms would be off by
  // ~1e-2, far outside this tolerance.
  cases.push_back(
      {"dot_general_f32_accumulation",
       {{BF({4, 256}), uniform(-1, 1, {4, 256})},
        {BF({256, 8}), uniform(-1, 1, {256, 8})},
        {H({4, 64}), uniform(-1, 1, {4, 64})},
        {H({64, 8}), uniform(-1, 1, {64, 8})}},
       "a = [x.astype(np.float64) for x in (x0, x1, x2, x3)]\n"
       "out = (a[0] @ a[1], a[2] @ a[3])",
       1e-5,
       2e-5,
       [](Module&, Function&, const Args& x) -> Results {
         DotOptions f32_acc{.result_element = ElementType::kF32};
         return {
             dot_general(x[0], x[1], {.lhs_contracting = {1}, .rhs_contracting = {0}}, f32_acc),
             dot_general(x[2], x[3], {.lhs_contracting = {1}, .rhs_contracting = {0}}, f32_acc)};
       }});
  cases.push_back({"call",
                   {{F({2, 3}), uniform(-1, 1, {2, 3})}, {F({2, 3}), uniform(-1, 1, {2, 3})}},
                   "out = (x0 * 2 + x1, x0)",
                   0,
                   0,
                   [](Module& m, Function& f, const Args& x) -> Results {
                     Function& helper = m.add_function("scale_add", Visibility::kPrivate);
                     Value a = helper.argument("a", F({2, 3}));
                     Value b = helper.argument("b", F({2, 3}));
                     helper.finish({a * constant(helper.body(), F({2, 3}), 2.0) + b, a});
                     return call(f.body(), helper, {x[0], x[1]});
                   }});
  cases.push_back({"aliasing",
                   {{F({4, 6}), uniform(-1, 1, {4, 6})},
                    {F({1, 6}), uniform(5, 6, {1, 6})},
                    {I({}), "np.array(2)"}},
                   "out = x0.copy()\nout[2] = x1[0]",
                   0,
                   0,
                   [](Module&, Function& f, const Args& x) -> Results {
                     f.alias_output(x[0], 0);
                     Value zero = scalar(f.body(), ElementType::kI32, 0);
                     return {dynamic_update_slice(x[0], x[1], {x[2], zero})};
                   }});
  return cases;
}

std::string numpy_dtype(ElementType e) {
  switch (e) {
    case ElementType::kF32:
      return "float32";
    case ElementType::kF16:
      return "float16";
    case ElementType::kBF16:
      return "bfloat16";
    case ElementType::kI1:
      return "bool";
    case ElementType::kI8:
      return "int8";
    case ElementType::kI32:
      return "int32";
    case ElementType::kI64:
      return "int64";
    case ElementType::kUI8:
      return "uint8";
    case ElementType::kUI32:
      return "uint32";
  }
  return "?";
}

fs::path venv() {
  if (const char* dir = std::getenv("XLACEL_VENV")) return dir;
  return fs::path(XLACEL_SOURCE_DIR) / ".venv";
}

std::string quote(const fs::path& path) {
  return "'" + path.string() + "'";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Built {
  OpCase op_case;
  std::vector<TensorType> result_types;
  fs::path mlir;  // the case's own module m_<op>, entry @main
};

struct Suite {
  std::vector<Built> cases;
  fs::path combined;  // module @ops: every case as a public function named after its op
};

// Adds the case's entry function (arguments x0, x1, ...) to `module` and builds its body.
const Function& add_case(Module& module, const std::string& name, const OpCase& c) {
  Function& f = module.add_function(name);
  Args args;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    args.push_back(f.argument(fmt::format("x{}", i), c.inputs[i].first));
  }
  f.finish(c.build(module, f, args));
  return f;
}

Suite build_all(const fs::path& dir) {
  Suite suite;
  Module combined("ops");
  for (OpCase& c : op_cases()) {
    Module module("m_" + c.op);
    std::vector<TensorType> result_types = add_case(module, "main", c).result_types();
    add_case(combined, c.op, c);
    fs::path mlir = dir / (c.op + ".mlir");
    std::ofstream(mlir) << module.to_text();
    suite.cases.push_back({std::move(c), std::move(result_types), mlir});
  }
  suite.combined = dir / "all_ops.mlir";
  std::ofstream(suite.combined) << combined.to_text();
  return suite;
}

struct CompileResult {
  bool ok = false;
  std::string log;
};

// Compiles `mlir` files to <name><suffix>.vmfb next to them, two iree-compile processes at a time.
std::vector<CompileResult> compile_all(const std::vector<fs::path>& mlirs, const std::string& flags,
                                       const std::string& suffix) {
  const fs::path compiler = venv() / "bin" / "iree-compile";
  std::vector<CompileResult> results(mlirs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < mlirs.size(); i = next++) {
      fs::path out = fs::path(mlirs[i]).replace_extension(suffix + ".vmfb");
      fs::path log = fs::path(mlirs[i]).replace_extension(suffix + ".log");
      std::string command = fmt::format("{} {} {} -o {} > {} 2>&1", quote(compiler), flags,
                                        quote(mlirs[i]), quote(out), quote(log));
      results[i].ok = std::system(command.c_str()) == 0;
      results[i].log = read_text(log);
    }
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();
  return results;
}

// Where each case's compiled entry point lives.
struct Binary {
  bool ok = false;
  std::string log;
  fs::path vmfb;
  std::string module;
  std::string function;
};

// One iree-compile of the combined module; only if that fails, each case's own module (two at a
// time), so that a failure names the op.
std::vector<Binary> compile_cases(const Suite& suite, const std::string& flags,
                                  const std::string& suffix) {
  std::vector<Binary> binaries(suite.cases.size());
  CompileResult combined = compile_all({suite.combined}, flags, suffix).front();
  if (combined.ok) {
    for (size_t i = 0; i < binaries.size(); ++i) {
      binaries[i] = {true, "", fs::path(suite.combined).replace_extension(suffix + ".vmfb"), "ops",
                     suite.cases[i].op_case.op};
    }
    return binaries;
  }
  std::vector<fs::path> mlirs;
  for (const Built& b : suite.cases) mlirs.push_back(b.mlir);
  std::vector<CompileResult> each = compile_all(mlirs, flags, suffix);
  for (size_t i = 0; i < binaries.size(); ++i) {
    binaries[i] = {each[i].ok, each[i].log, fs::path(mlirs[i]).replace_extension(suffix + ".vmfb"),
                   "m_" + suite.cases[i].op_case.op, "main"};
  }
  return binaries;
}

std::string head(const std::string& text, size_t n = 1500) {
  return text.substr(0, n);
}

// The runtime-independent part of a run_modules.py case: inputs, results, reference.
nlohmann::json manifest_case(const Built& built, size_t seed) {
  const OpCase& c = built.op_case;
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& [type, expr] : c.inputs) {
    inputs.push_back(
        {{"expr", expr}, {"dtype", numpy_dtype(type.element())}, {"shape", type.shape()}});
  }
  nlohmann::json results = nlohmann::json::array();
  for (const TensorType& type : built.result_types) {
    results.push_back({{"dtype", numpy_dtype(type.element())}, {"shape", type.shape()}});
  }
  return {{"op", c.op},
          {"seed", seed},
          {"inputs", inputs},
          {"results", results},
          {"reference", c.reference},
          {"rtol", c.rtol},
          {"atol", c.atol}};
}

// Writes the manifest to dir, runs run_modules.py on it and expects every case to match numpy.
void run_and_check(const fs::path& dir, const nlohmann::json& manifest, const std::string& what) {
  const fs::path python = venv() / "bin" / "python";
  const fs::path manifest_path = dir / "manifest.json";
  std::ofstream(manifest_path) << manifest.dump(1);
  const fs::path script = fs::path(XLACEL_SOURCE_DIR) / "tests" / "stablehlo" / "run_modules.py";
  const fs::path output_path = dir / "results.txt";
  std::string command = fmt::format("{} {} {} > {} 2>&1", quote(python), quote(script),
                                    quote(manifest_path), quote(output_path));
  int status = std::system(command.c_str());
  std::string output = read_text(output_path);
  ASSERT_EQ(status, 0) << "run_modules.py failed:\n" << head(output, 4000);
  std::map<std::string, nlohmann::json> by_op;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("RESULT ", 0) == 0) {
      nlohmann::json r = nlohmann::json::parse(line.substr(7));
      by_op[r["op"].get<std::string>()] = r;
    }
  }
  int passed = 0;
  for (const auto& c : manifest["cases"]) {
    std::string op = c["op"];
    auto it = by_op.find(op);
    if (it == by_op.end()) {
      ADD_FAILURE() << op << ": no result from run_modules.py:\n" << head(output, 4000);
      continue;
    }
    const bool ok = it->second["ok"].get<bool>();
    passed += ok;
    EXPECT_TRUE(ok) << op << ": " << what
                    << " result differs from numpy: " << it->second["message"].get<std::string>();
  }
  std::cout << what << ": " << passed << " of " << manifest["cases"].size()
            << " op cases match numpy\n";
}

#define XLACEL_REQUIRE_IREE_COMPILE()                                               \
  if (!fs::exists(venv() / "bin" / "iree-compile"))                                 \
  GTEST_SKIP() << "iree-compile not found at " << (venv() / "bin" / "iree-compile") \
               << " (run scripts/setup, or set XLACEL_VENV)"

constexpr std::string_view kCpuFlags =
    "--iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu "
    "--iree-llvmcpu-target-cpu=host";

TEST(StablehloIree, LlvmCpuCompilesAndMatchesNumpy) {
  XLACEL_REQUIRE_IREE_COMPILE();
  const fs::path python = venv() / "bin" / "python";
  std::string probe = quote(python) + " -c 'import iree.runtime, ml_dtypes, numpy' 2>/dev/null";
  if (std::system(probe.c_str()) != 0) {
    GTEST_SKIP() << python << " cannot import iree.runtime, ml_dtypes and numpy";
  }
  auto start = std::chrono::steady_clock::now();
  const fs::path dir = testing::scratch_dir("stablehlo_iree/llvm-cpu");
  Suite suite = build_all(dir);
  std::vector<Binary> binaries = compile_cases(suite, std::string(kCpuFlags), ".cpu");

  nlohmann::json manifest = {{"cases", nlohmann::json::array()}};
  for (size_t i = 0; i < suite.cases.size(); ++i) {
    const OpCase& c = suite.cases[i].op_case;
    EXPECT_TRUE(binaries[i].ok) << c.op << ": iree-compile (llvm-cpu) failed on "
                                << suite.cases[i].mlir << ":\n"
                                << head(binaries[i].log);
    if (!binaries[i].ok) continue;
    nlohmann::json entry = manifest_case(suite.cases[i], i);
    entry["module"] = binaries[i].module;
    entry["function"] = binaries[i].function;
    entry["vmfb"] = binaries[i].vmfb;
    manifest["cases"].push_back(entry);
  }
  auto compiled_at = std::chrono::steady_clock::now();
  run_and_check(dir, manifest, "IREE llvm-cpu");
  auto done = std::chrono::steady_clock::now();
  std::cout << suite.cases.size() << " op cases: compile "
            << std::chrono::duration<double>(compiled_at - start).count() << " s, run "
            << std::chrono::duration<double>(done - compiled_at).count() << " s\n";
}

// Whether XLA can take the module as it is: exactly one public function, @main (private helpers
// are fine).
bool single_public_main(const std::string& text) {
  size_t publics = 0;
  for (size_t at = text.find("func.func @"); at != std::string::npos;
       at = text.find("func.func @", at + 1)) {
    ++publics;
  }
  return publics == 1 && text.find("func.func @main(") != std::string::npos;
}

TEST(StablehloXla, CpuCompilesAndMatchesNumpy) {
  const fs::path python = venv() / "bin" / "python";
  std::string probe =
      quote(python) + " -c 'import jax, jax.extend, jaxlib, ml_dtypes, numpy' 2>/dev/null";
  if (std::system(probe.c_str()) != 0) {
    GTEST_SKIP() << python << " cannot import jax, jaxlib, ml_dtypes and numpy (pip install jax "
                 << "jaxlib, pinned in scripts/requirements.txt)";
  }
  auto start = std::chrono::steady_clock::now();
  const fs::path dir = testing::scratch_dir("stablehlo_xla/cpu");
  Suite suite = build_all(dir);
  nlohmann::json manifest = {{"runtime", "xla"}, {"cases", nlohmann::json::array()}};
  for (size_t i = 0; i < suite.cases.size(); ++i) {
    const Built& built = suite.cases[i];
    if (!single_public_main(read_text(built.mlir))) {
      std::cout << "note: " << built.op_case.op << " has no single public @main; not run on XLA\n";
      continue;
    }
    nlohmann::json entry = manifest_case(built, i);
    entry["mlir"] = built.mlir;
    manifest["cases"].push_back(entry);
  }
  EXPECT_EQ(manifest["cases"].size(), suite.cases.size());  // every case has one today
  run_and_check(dir, manifest, "XLA CPU");
  std::cout << manifest["cases"].size() << " op cases compiled and run by XLA CPU in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
}

TEST(StablehloIree, CudaCompiles) {
  XLACEL_REQUIRE_IREE_COMPILE();
  const fs::path dir = testing::scratch_dir("stablehlo_iree/cuda");
  Suite suite = build_all(dir);
  // IREE 3.13.0 has no target details for sm_90 ("missing GPU target in #hal.executable.target",
  // iree-org/iree#22147): probe it, and fall back to sm_80, whose PTX also runs on Hopper.
  std::string target = "sm_90";
  Module probe_module("probe");
  Function& probe_main = probe_module.add_function("main");
  Value p = probe_main.argument("x", F({4}));
  probe_main.finish({add(p, p)});  // a real dispatch: constants alone need no GPU target
  std::ofstream(dir / "probe.mlir") << probe_module.to_text();
  CompileResult probe = compile_all({dir / "probe.mlir"},
                                    "--iree-hal-target-device=cuda --iree-cuda-target=sm_90", "")
                            .front();
  if (!probe.ok) {
    ASSERT_NE(probe.log.find("missing GPU target"), std::string::npos)
        << "sm_90 failed for another reason:\n"
        << head(probe.log);
    target = "sm_80";
    std::cout << "note: this iree-compile cannot target sm_90 (iree-org/iree#22147); "
                 "compiling for sm_80\n";
  }
  RecordProperty("cuda_target", target);
  auto start = std::chrono::steady_clock::now();
  std::vector<Binary> binaries =
      compile_cases(suite, "--iree-hal-target-device=cuda --iree-cuda-target=" + target, ".cuda");
  for (size_t i = 0; i < suite.cases.size(); ++i) {
    EXPECT_TRUE(binaries[i].ok) << suite.cases[i].op_case.op << ": iree-compile (cuda " << target
                                << ") failed on " << suite.cases[i].mlir << ":\n"
                                << head(binaries[i].log);
  }
  std::cout << suite.cases.size() << " op cases compiled for cuda " << target << " in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
}

}  // namespace
}  // namespace xlacel::stablehlo
