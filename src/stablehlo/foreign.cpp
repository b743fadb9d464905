#include "stablehlo/foreign.h"

#include "stablehlo/detail.h"

namespace xlacel::stablehlo {

Value foreign_op(std::string name, std::vector<Value> operands,
                 std::map<std::string, std::string> attributes, TensorType result) {
  return detail::emit(std::move(name), std::move(operands), std::move(attributes),
                      std::move(result));
}

}  // namespace xlacel::stablehlo
