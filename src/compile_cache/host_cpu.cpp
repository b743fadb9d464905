#include "compile_cache/host_cpu.h"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <array>
#include <fstream>
#include <string_view>

#include "common/trim.h"
#include "compile_cache/hash.h"

namespace xlacel::compile_cache {

namespace {

HostCpu read_host_cpu() {
  std::string machine = "unknown";
  struct utsname names {};
  if (::uname(&names) == 0) machine = names.machine;

  // The fields that describe what the CPU can execute (x86, Arm and RISC-V spellings); the
  // rest (MHz, core ids, bogomips, ...) varies between identical machines.
  static constexpr std::array<std::string_view, 12> kKeys = {
      "vendor_id",        "cpu family",  "model",    "model name",
      "stepping",         "flags",       "Features", "CPU implementer",
      "CPU architecture", "CPU variant", "CPU part", "isa"};
  std::string identity = "arch=" + machine;
  std::string model_name;
  std::string features;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (trim(line).empty()) break;  // the end of the first processor's entry
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string_view key = trim(std::string_view(line).substr(0, colon));
    std::string_view value = trim(std::string_view(line).substr(colon + 1));
    for (std::string_view wanted : kKeys) {
      if (key != wanted) continue;
      identity += fmt::format("\n{}={}", key, value);
      if (key == "model name") model_name = value;
      if (key == "flags" || key == "Features" || key == "isa") features = value;
    }
  }
  HostCpu cpu;
  cpu.identity = identity;
  cpu.description = fmt::format("{}{}{} (features {:016x})", machine, model_name.empty() ? "" : " ",
                                model_name, hash_bytes(features).low);
  return cpu;
}

}  // namespace

const HostCpu& host_cpu() {
  static const HostCpu cpu = read_host_cpu();
  return cpu;
}

}  // namespace xlacel::compile_cache
