#include "models/graph_options.h"

#include <fmt/format.h>

namespace xlacel::models {

const char* graph_kind_name(GraphKind kind) {
  switch (kind) {
    case GraphKind::kPrefill:
      return "prefill";
    case GraphKind::kDecode:
      return "decode";
    case GraphKind::kDecodeLogits:
      return "decode-logits";
    case GraphKind::kCopySlot:
      return "copy-slot";
    case GraphKind::kSaveSlot:
      return "save-slot";
    case GraphKind::kRestoreSlot:
      return "restore-slot";
    case GraphKind::kEmbed:
      return "embed";
    case GraphKind::kVerify:
      return "verify";
  }
  return "?";
}

bool prefills(GraphKind kind) {
  return kind == GraphKind::kPrefill || kind == GraphKind::kEmbed || kind == GraphKind::kVerify;
}

bool moves_slots(GraphKind kind) {
  return kind == GraphKind::kCopySlot || kind == GraphKind::kSaveSlot ||
         kind == GraphKind::kRestoreSlot;
}

std::optional<GraphKind> parse_graph_kind(std::string_view name) {
  for (GraphKind kind :
       {GraphKind::kPrefill, GraphKind::kDecode, GraphKind::kDecodeLogits, GraphKind::kCopySlot,
        GraphKind::kSaveSlot, GraphKind::kRestoreSlot, GraphKind::kEmbed, GraphKind::kVerify}) {
    if (name == graph_kind_name(kind)) return kind;
  }
  return std::nullopt;
}

const char* weight_type_name(WeightType type) {
  switch (type) {
    case WeightType::kF32:
      return "f32";
    case WeightType::kBF16:
      return "bf16";
    case WeightType::kF16:
      return "f16";
    case WeightType::kAuto:
      return "auto";
  }
  return "?";
}

std::optional<WeightType> parse_weight_type(std::string_view name) {
  for (WeightType type :
       {WeightType::kF32, WeightType::kBF16, WeightType::kF16, WeightType::kAuto}) {
    if (name == weight_type_name(type)) return type;
  }
  return std::nullopt;
}

std::string graph_name(const GraphOptions& options) {
  const std::string window = options.window > 0 ? fmt::format("-w{}", options.window) : "";
  const std::string partitions =
      options.tensor_parallel > 1 ? fmt::format("-tp{}", options.tensor_parallel) : "";
  const std::string sequences = options.sequences > 1 ? fmt::format("x{}", options.sequences) : "";
  return fmt::format("{}-b{}{}-s{}-c{}{}-{}{}", graph_kind_name(options.kind), options.bucket,
                     sequences, options.slots, options.capacity, window,
                     weight_type_name(options.weights), partitions);
}

std::string module_name(GraphKind kind) {
  std::string name = std::string("xlacel_") + graph_kind_name(kind);
  for (char& ch : name) ch = ch == '-' ? '_' : ch;
  return name;
}

namespace {

const lowering::Lowering& lowering_of(const GraphOptions& options) {
  return options.lowering != nullptr ? *options.lowering : lowering::portable_lowering();
}

}  // namespace

const lowering::PlanarKernel* GraphOptions::planar_kernel() const {
  if (weights != WeightType::kAuto) return nullptr;
  // A verify's rows take decode's product: under Math::kFast each row is then rounded as a
  // decode step rounds it, so drafted tokens are kept where decode would have produced them.
  const bool prefill_phase = prefills(kind) && kind != GraphKind::kVerify;
  return lowering_of(*this).planar_kernel(
      prefill_phase ? lowering::Phase::kPrefill : lowering::Phase::kDecode, math);
}

const lowering::AttentionKernel* GraphOptions::attention_kernel() const {
  return lowering_of(*this).attention_kernel();
}

bool GraphOptions::paired_nibbles() const {
  return lowering_of(*this).pairs_code_rows();
}

}  // namespace xlacel::models
