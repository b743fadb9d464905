#include "stablehlo/printer.h"

#include <algorithm>
#include <unordered_map>

#include "stablehlo/detail.h"

namespace xlacel::stablehlo {
namespace {

class Printer {
 public:
  explicit Printer(std::string& out) : out_(out) {}

  void function(const Function& f, int indent) {
    if (!f.finished()) build_fail("func.func", "@{} is not finished (call finish())", f.name());
    std::vector<std::string>& names = names_[&f.body()];
    names.resize(f.arguments().size());
    std::string signature;
    for (size_t i = 0; i < f.arguments().size(); ++i) {
      const Argument& arg = f.arguments()[i];
      names[static_cast<size_t>(arg.value.index())] = "%" + arg.name;
      if (i > 0) signature += ", ";
      signature += fmt::format("%{}: {}", arg.name, arg.value.type().str());
      if (!arg.attributes.empty()) signature += " " + dictionary(arg.attributes);
    }
    std::vector<TensorType> results = f.result_types();
    const auto& result_attributes = f.result_attributes();
    const bool attributed = std::any_of(result_attributes.begin(), result_attributes.end(),
                                        [](const auto& attributes) { return !attributes.empty(); });
    std::string result_text;
    if (results.size() == 1 && !attributed) {
      result_text = " -> " + results.front().str();
    } else if (attributed) {
      // Results with attributes: `-> (tensor<...> {name = value}, ...)`.
      for (size_t i = 0; i < results.size(); ++i) {
        result_text += (i == 0 ? " -> (" : ", ") + results[i].str();
        if (!result_attributes[i].empty()) result_text += " " + dictionary(result_attributes[i]);
      }
      result_text += ")";
    } else if (!results.empty()) {
      result_text = fmt::format(" -> ({})", join_types(results));
    }
    out_ += fmt::format("{:{}}func.func {}@{}({}){} {{\n", "", indent,
                        f.visibility() == Visibility::kPrivate ? "private " : "", f.name(),
                        signature, result_text);
    block_body(f.body(), indent + 2);
    out_ += fmt::format("{:{}}}}\n", "", indent);
  }

 private:
  static std::string dictionary(const std::map<std::string, std::string>& attributes) {
    std::string text = "{";
    bool first = true;
    for (const auto& [name, value] : attributes) {
      text += fmt::format("{}{} = {}", first ? "" : ", ", name, value);
      first = false;
    }
    return text + "}";
  }

  std::string fresh() { return fmt::format("%{}", next_++); }

  const std::string& name_of(const Value& v) {
    return names_.at(&v.block()).at(static_cast<size_t>(v.index()));
  }

  std::string operand_list(const std::vector<Value>& values) {
    std::string text;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) text += ", ";
      text += name_of(values[i]);
    }
    return text;
  }

  static std::string types(const std::vector<Value>& values) { return detail::types_of(values); }

  void block_body(const Block& block, int indent) {
    std::vector<std::string>& names = names_[&block];
    names.resize(block.value_count());  // argument names already set; results named below
    for (const Operation& op : block.operations()) operation(op, names, indent);
    out_ += fmt::format("{:{}}\"{}\"({}) : ({}) -> ()\n", "", indent, block.terminator(),
                        operand_list(block.returned()), types(block.returned()));
  }

  void operation(const Operation& op, std::vector<std::string>& names, int indent) {
    std::string lhs;
    if (!op.results.empty()) {
      std::string base = fresh();
      if (op.results.size() == 1) {
        names.at(static_cast<size_t>(op.results[0].index())) = base;
        lhs = base + " = ";
      } else {
        for (size_t i = 0; i < op.results.size(); ++i)
          names.at(static_cast<size_t>(op.results[i].index())) = fmt::format("{}#{}", base, i);
        lhs = fmt::format("{}:{} = ", base, op.results.size());
      }
    }
    out_ += fmt::format("{:{}}{}\"{}\"({})", "", indent, lhs, op.name, operand_list(op.operands));
    if (!op.regions.empty()) {
      out_ += " (";
      for (size_t r = 0; r < op.regions.size(); ++r) {
        const Block& region = *op.regions[r];
        std::vector<std::string>& region_names = names_[&region];
        region_names.resize(region.value_count());
        out_ += fmt::format("{}{{\n", r > 0 ? ", " : "");
        // Captured values keep their outer names; the entry block needs a label only for its
        // arguments.
        for (size_t i = 0; i < region.captured().size(); ++i) {
          region_names.at(static_cast<size_t>(region.stand_ins()[i].index())) =
              name_of(region.captured()[i]);
        }
        if (!region.arguments().empty()) {
          std::string arguments;
          for (size_t i = 0; i < region.arguments().size(); ++i) {
            std::string& name = region_names.at(static_cast<size_t>(region.arguments()[i].index()));
            name = fresh();
            arguments += fmt::format("{}{}: {}", i > 0 ? ", " : "", name,
                                     region.arguments()[i].type().str());
          }
          out_ += fmt::format("{:{}}^bb0({}):\n", "", indent, arguments);
        }
        block_body(region, indent + 2);
        out_ += fmt::format("{:{}}}}", "", indent);
      }
      out_ += ")";
    }
    if (!op.attributes.empty()) out_ += " " + dictionary(op.attributes);
    std::string result_types = types(op.results);
    if (op.results.size() != 1) result_types = "(" + result_types + ")";
    out_ += fmt::format(" : ({}) -> {}\n", types(op.operands), result_types);
  }

  std::string& out_;
  std::unordered_map<const Block*, std::vector<std::string>> names_;
  int next_ = 0;
};

}  // namespace

std::string print_function(const Function& function, int indent) {
  std::string out;
  Printer(out).function(function, indent);
  return out;
}

}  // namespace xlacel::stablehlo
