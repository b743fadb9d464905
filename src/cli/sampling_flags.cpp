#include "cli/sampling_flags.h"

#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"

namespace xlacel::cli {

void add_sampling_flags(CLI::App* command, engine::SamplingOptions& s) {
  command->add_option("--temp", s.temperature, "sampling temperature (0: greedy)")
      ->capture_default_str();
  command->add_option("--top-k", s.top_k, "keep the K most likely tokens (0: off)")
      ->capture_default_str();
  command->add_option("--top-p", s.top_p, "nucleus sampling threshold (1: off)")
      ->capture_default_str();
  command->add_option("--min-p", s.min_p, "drop tokens below P x the top probability (0: off)")
      ->capture_default_str();
  command->add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1: off)")
      ->capture_default_str();
  command
      ->add_option("--repeat-last-n", s.repeat_last_n,
                   "recent tokens the penalty looks at (0: all)")
      ->capture_default_str();
  command->add_option("--seed", s.seed, "random seed for sampling")->capture_default_str();
}

void check_sampling_flags(const engine::SamplingOptions& sampling) {
  std::string problem = sampling.validate();
  if (problem.empty()) return;
  // The sampler names its fields ("top_p must be ..."); here the user typed flags.
  static const std::pair<const char*, const char*> kFlags[] = {
      {"temperature", "--temp"},
      {"top_k", "--top-k"},
      {"top_p", "--top-p"},
      {"min_p", "--min-p"},
      {"repeat_penalty", "--repeat-penalty"},
      {"repeat_last_n", "--repeat-last-n"}};
  for (const auto& [field, flag] : kFlags) {
    if (problem.starts_with(std::string(field) + " ")) {
      problem.replace(0, std::string_view(field).size(), flag);
      break;
    }
  }
  throw Error(problem);
}

}  // namespace xlacel::cli
