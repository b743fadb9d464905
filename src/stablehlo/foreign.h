#pragma once
// An operation of another dialect that the runtime's compiler understands (IREE's flow.dispatch
// of a hand-written kernel), printed in MLIR's generic form like every op here. The op's
// attributes are MLIR attribute text the caller vouches for; only operand ownership is checked.
#include <map>
#include <string>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

Value foreign_op(std::string name, std::vector<Value> operands,
                 std::map<std::string, std::string> attributes, TensorType result);

}  // namespace xlacel::stablehlo
