#pragma once
// An operation of another dialect that the runtime's compiler understands (IREE's flow.dispatch
// of a hand-written kernel), printed in MLIR's generic form like every op here. The op's
// attributes are MLIR attribute text the caller vouches for; only operand ownership is checked.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

Value foreign_op(std::string name, std::vector<Value> operands,
                 std::map<std::string, std::string> attributes, TensorType result);

// The names of `function`'s arguments that only foreign ops read: every use, in nested regions
// too, is an operand of one, and none is returned. What reads them is then the runtime's
// hand-written code alone, not code its compiler generates.
std::set<std::string> arguments_only_foreign_ops_read(const Function& function);

}  // namespace xlacel::stablehlo
