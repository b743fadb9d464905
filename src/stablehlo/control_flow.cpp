#include "stablehlo/control_flow.h"

#include <memory>

#include "stablehlo/detail.h"

namespace xlacel::stablehlo {

namespace {

constexpr std::string_view kIf = "stablehlo.if";

std::unique_ptr<Block> build_branch(Block& outer, const Branch& build, const char* which,
                                    std::vector<TensorType>& types) {
  auto branch = std::make_unique<Block>(outer.function(), "stablehlo.return");
  std::vector<Value> returned = build(*branch);
  for (const Value& v : branch->captured()) {
    if (&v.block() != &outer) {
      build_fail(kIf, "the {} branch captures {} from a block other than the op's", which,
                 v.type().str());
    }
  }
  branch->set_terminator(returned);
  types.clear();
  for (const Value& v : returned) types.push_back(v.type());
  return branch;
}

}  // namespace

std::vector<Value> conditional(Value pred, const Branch& then_branch, const Branch& else_branch) {
  if (!pred.valid()) build_fail(kIf, "empty predicate");
  if (pred.type() != TensorType(ElementType::kI1, {})) {
    build_fail(kIf, "the predicate must be tensor<i1>, not {}", pred.type().str());
  }
  Block& outer = pred.block();
  std::vector<TensorType> then_types, else_types;
  Operation op;
  op.name = kIf;
  op.operands = {pred};
  op.regions.push_back(build_branch(outer, then_branch, "then", then_types));
  op.regions.push_back(build_branch(outer, else_branch, "else", else_types));
  if (then_types != else_types) {
    build_fail(kIf, "the branches return ({}) and ({})", join_types(then_types),
               join_types(else_types));
  }
  return outer.append(std::move(op), then_types);
}

}  // namespace xlacel::stablehlo
