#include "backends/iree/iree_custom_dispatch.h"

#include <fmt/format.h>

#include <set>
#include <system_error>

#include "common/error.h"
#include "compile_cache/atomic_file.h"
#include "compile_cache/hash.h"
#include "stablehlo/foreign.h"
#include "stablehlo/module.h"

namespace xlacel::backends {

std::filesystem::path write_kernel_object(std::string_view bytes, std::string_view stem,
                                          const std::filesystem::path& cache_dir) {
  const std::filesystem::path dir = cache_dir / "kernels";
  const std::filesystem::path path =
      dir / fmt::format("{}-{}.o", stem, compile_cache::hash_bytes(bytes).hex());
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == bytes.size()) return path;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create directory: {}", dir.string(), ec.message()));
  compile_cache::TempFile temp(dir, std::string(stem), ".o");
  temp.write(bytes);
  temp.commit(path);
  return path;
}

namespace {

// The builtin module's body of executable `name`: the kernel's import and the export calling it.
std::string call_functions(const std::string& name, const KernelCall& call) {
  std::string bindings, types, constants, views, arguments;
  std::set<std::string> bound;
  auto bind = [&](const std::string& binding) {
    if (bound.insert(binding).second) {
      bindings += fmt::format("{}%{}: !stream.binding", bindings.empty() ? "" : ", ", binding);
    }
  };
  if (!call.index_binding.empty()) {
    bind(call.index_binding);
    views += fmt::format(
        "      %index_view = stream.binding.subspan %{}[%c0] : !stream.binding -> memref<1xi32>\n"
        "      %index_i32 = memref.load %index_view[%c0] : memref<1xi32>\n"
        "      %index = arith.index_cast %index_i32 : i32 to index\n",
        call.index_binding);
  }
  for (std::size_t i = 0; i < call.memrefs.size(); ++i) {
    const KernelMemref& m = call.memrefs[i];
    bind(m.binding);
    types += fmt::format("{}memref<?x{}>", i == 0 ? "" : ", ", m.element);
    constants += fmt::format("      %size{} = arith.constant {} : index\n", i, m.size);
    const std::string at =
        m.offset != 0 || m.index_stride > 0 ? fmt::format("at{}", i) : std::string("c0");
    if (m.index_stride > 0) {
      views += fmt::format(
          "      %{0}_fixed = arith.constant {1} : index\n"
          "      %{0}_stride = arith.constant {2} : index\n"
          "      %{0}_moved = arith.muli %index, %{0}_stride : index\n"
          "      %{0} = arith.addi %{0}_fixed, %{0}_moved : index\n",
          at, m.offset, m.index_stride);
    } else if (m.offset != 0) {
      constants += fmt::format("      %{} = arith.constant {} : index\n", at, m.offset);
    }
    views += fmt::format(
        "      %m{0} = stream.binding.subspan %{1}[%{2}] : !stream.binding -> "
        "memref<?x{3}>{{%size{0}}}\n",
        i, m.binding, at, m.element);
    arguments += fmt::format("{}%m{}", i == 0 ? "" : ", ", i);
  }
  for (const auto& [index, value] : call.indices) {
    types += ", index";
    constants += fmt::format("      %{} = arith.constant {} : index\n", index, value);
    arguments += fmt::format(", %{}", index);
  }
  types += ", index";  // the workgroup
  return fmt::format(
      R"(      func.func private @{entry}({types}) attributes {{hal.import.static}}
      func.func @{name}({bindings}) {{
      %c0 = arith.constant 0 : index
{constants}      %workgroup = stream.dispatch.workgroup.id[0] : index
{views}      func.call @{entry}({arguments}, %workgroup) : ({types}) -> ()
      return
      }}
)",
      fmt::arg("entry", call.entry), fmt::arg("types", types), fmt::arg("name", name),
      fmt::arg("bindings", bindings), fmt::arg("constants", constants), fmt::arg("views", views),
      fmt::arg("arguments", arguments));
}

}  // namespace

stablehlo::Value custom_dispatch(stablehlo::Value anchor, const std::string& name,
                                 const std::filesystem::path& object, int64_t workgroups,
                                 const KernelCall& call, std::vector<stablehlo::Value> operands,
                                 const stablehlo::TensorType& result) {
  const std::string functions = call_functions(name, call);
  stablehlo::Module* module = anchor.block().function()->module();
  if (module == nullptr) throw Error(fmt::format("{}: the graph's function has no module", name));
  module->add_declaration(
      name, fmt::format(
                R"(  stream.executable private @{name} attributes {{
    hal.executable.objects = #hal.executable.objects<{{
      #hal.executable.target<"llvm-cpu", "embedded-elf-x86_64"> = [#hal.executable.object<{{path = "{object}"}}>]
    }}>
  }} {{
    stream.executable.export public @{name} workgroups() -> (index, index, index) {{
      %x = arith.constant {workgroups} : index
      %c1 = arith.constant 1 : index
      stream.return %x, %c1, %c1 : index, index, index
    }}
    builtin.module {{
{functions}    }}
  }})",
                fmt::arg("name", name), fmt::arg("object", object.string()),
                fmt::arg("workgroups", workgroups), fmt::arg("functions", functions)));
  const std::size_t count = operands.size();
  return stablehlo::foreign_op(
      "flow.dispatch", std::move(operands),
      {{"entry_points", fmt::format("[@{0}::@{0}]", name)},
       {"operandSegmentSizes", fmt::format("array<i32: 0, {}, 0, 0>", count)},
       {"tied_operands", "[-1 : index]"}},
      result);
}

}  // namespace xlacel::backends
