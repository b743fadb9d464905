#include "stablehlo/dot.h"

#include "stablehlo/detail.h"

namespace xlacel::stablehlo {
namespace {

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::kDefault:
      return "DEFAULT";
    case Precision::kHigh:
      return "HIGH";
    case Precision::kHighest:
      return "HIGHEST";
  }
  return "?";
}

}  // namespace

Value dot_general(Value lhs, Value rhs, const DotDimensions& d, const DotOptions& options) {
  constexpr std::string_view kOp = "stablehlo.dot_general";
  std::vector<Value> operands{lhs, rhs};
  if (!lhs.valid() || !rhs.valid()) build_fail(kOp, "empty operand");
  auto fail = [&](std::string_view problem) {
    build_fail(kOp,
               "{}: lhs_batching {}, rhs_batching {}, lhs_contracting {}, "
               "rhs_contracting {} for ({})",
               problem, detail::int_list(d.lhs_batching), detail::int_list(d.rhs_batching),
               detail::int_list(d.lhs_contracting), detail::int_list(d.rhs_contracting),
               detail::types_of(operands));
  };
  if (lhs.element() != rhs.element()) fail("operand element types differ");
  if (is_bool(lhs.element())) fail("operands must be integer or float");
  if (d.lhs_batching.size() != d.rhs_batching.size()) fail("batching dimension counts differ");
  if (d.lhs_contracting.size() != d.rhs_contracting.size()) {
    fail("contracting dimension counts differ");
  }
  auto concat = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> all = a;
    all.insert(all.end(), b.begin(), b.end());
    return all;
  };
  detail::check_axes(kOp, "lhs batching + contracting dims",
                     concat(d.lhs_batching, d.lhs_contracting), lhs.rank(), operands);
  detail::check_axes(kOp, "rhs batching + contracting dims",
                     concat(d.rhs_batching, d.rhs_contracting), rhs.rank(), operands);
  for (size_t i = 0; i < d.lhs_batching.size(); ++i) {
    if (lhs.type().dim(d.lhs_batching[i]) != rhs.type().dim(d.rhs_batching[i])) {
      fail("batching dimension sizes differ");
    }
  }
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i) {
    if (lhs.type().dim(d.lhs_contracting[i]) != rhs.type().dim(d.rhs_contracting[i])) {
      fail("contracting dimension sizes differ");
    }
  }
  ElementType result_element = options.result_element.value_or(lhs.element());
  if (result_element != lhs.element()) {
    bool ok = (is_float(lhs.element()) && result_element == ElementType::kF32) ||
              (is_integer(lhs.element()) &&
               (result_element == ElementType::kI32 || result_element == ElementType::kI64));
    if (!ok) {
      build_fail(kOp, "result element type {} is not a valid accumulation type for ({})",
                 to_string(result_element), detail::types_of(operands));
    }
  }
  std::vector<int64_t> shape;
  for (int64_t axis : d.lhs_batching) shape.push_back(lhs.type().dim(axis));
  for (int64_t i = 0; i < lhs.rank(); ++i) {
    if (!detail::contains(d.lhs_batching, i) && !detail::contains(d.lhs_contracting, i)) {
      shape.push_back(lhs.type().dim(i));
    }
  }
  for (int64_t i = 0; i < rhs.rank(); ++i) {
    if (!detail::contains(d.rhs_batching, i) && !detail::contains(d.rhs_contracting, i)) {
      shape.push_back(rhs.type().dim(i));
    }
  }
  std::string numbers;
  auto field = [&](std::string_view name, const std::vector<int64_t>& values) {
    if (values.empty()) return;
    numbers +=
        fmt::format("{}{} = {}", numbers.empty() ? "" : ", ", name, detail::int_list(values));
  };
  field("lhs_batching_dimensions", d.lhs_batching);
  field("rhs_batching_dimensions", d.rhs_batching);
  field("lhs_contracting_dimensions", d.lhs_contracting);
  field("rhs_contracting_dimensions", d.rhs_contracting);
  std::map<std::string, std::string> attributes{
      {"dot_dimension_numbers", fmt::format("#stablehlo.dot<{}>", numbers)}};
  if (options.precision) {
    attributes["precision_config"] = fmt::format(
        "[#stablehlo<precision {}>, #stablehlo<precision {}>]",
        precision_name(options.precision->first), precision_name(options.precision->second));
  }
  return detail::emit(std::string(kOp), std::move(operands), std::move(attributes),
                      TensorType(result_element, shape));
}

}  // namespace xlacel::stablehlo
