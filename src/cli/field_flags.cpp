#include "cli/field_flags.h"

#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace xlacel::cli {

namespace {

// Option fields (device::DeviceOptions, executor::ExecutorOptions, the runtime,
// compile_cache::IreeTargetOptions, engine::SchedulerOptions) and their flags.
constexpr std::pair<std::string_view, std::string_view> kFlagOfField[] = {
    {"runtime", "--backend"},
    {"threads", "--threads"},
    {"tensor_parallel", "--tensor-parallel"},
    {"weights", "--weights"},
    {"math", "--math"},
    {"capacity", "--context"},
    {"slots", "--parallel"},
    {"prefill_bucket", "--prefill-bucket"},
    {"small_prefill_bucket", "--small-prefill-bucket"},
    {"prefill_sequences", "--prefill-sequences"},
    {"backend", "--target"},
    {"cuda_sm", "--cuda-sm"},
    {"opt_level", "--opt-level"},
    {"triple", "--target-triple"},
    {"cpu", "--cpu"},
    {"prompt_cache_bytes", "--cache-ram"},
    {"speculation", "--speculative"},
    {"draft_max", "--draft-max"},
};

}  // namespace

std::string message_with_flag(const FieldError& error) {
  for (const auto& [field, flag] : kFlagOfField) {
    if (field == error.field()) return fmt::format("{}: {}", flag, error.problem());
  }
  return error.what();
}

}  // namespace xlacel::cli
