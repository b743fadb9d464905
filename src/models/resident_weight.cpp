#include "models/resident_weight.h"

#include "model_files/planar_blocks.h"
#include "models/weight_layout.h"

namespace xlacel::models {

using namespace stablehlo;

namespace {

std::optional<DType> stored_type(const ModelConfig& config, const WeightSpec& spec) {
  // Stacked experts from HF files: the first expert's tensor stands for all.
  const std::string hf = spec.hf_experts > 0 ? hf_expert_spec(spec, 0).hf_name : spec.hf_name;
  for (const std::string* name : {&spec.gguf_name, &hf}) {
    auto found = config.stored_types.find(*name);
    if (found != config.stored_types.end()) return found->second;
  }
  // gpt-oss's published MXFP4 experts: packed blocks beside their exponents
  // (models/weight_loader.cpp reads them as a GGUF's MXFP4).
  if (spec.hf_experts > 0 && config.stored_types.contains(spec.hf_name + "_blocks")) {
    return DType::kMXFP4;
  }
  return std::nullopt;
}

// The high bits of 5- and 6-bit codes, each shifted above its nibble: i8 [rows, cols / 32, 32]
// from the plane's B bytes per 32 elements (model_files/planar_blocks.h: element e at byte
// e % B, bits * (e / B) up).
Value high_bits_by_32(const Weight& weight) {
  const int64_t rows = weight.rows(), blocks = weight.cols() / 32;
  const int bits = weight.code_bits - 4;
  const int64_t per_byte = 8 / bits, per_block = 32 / per_byte;
  const std::vector<int64_t> shape = {rows, blocks, per_byte, per_block};
  Value bytes =
      broadcast_in_dim(reshape(*weight.high_bits, {rows, blocks, per_block}), shape, {0, 1, 3});
  Block& b = bytes.block();
  // Element s * B + j sits in byte j at bit s * bits.
  Value shifts = iota(b, bytes.type(), 2) * constant(b, bytes.type(), bits);
  Value high =
      logical_and(shift_right_logical(bytes, shifts), constant(b, bytes.type(), (1 << bits) - 1));
  return reshape(high * constant(b, bytes.type(), 16), {rows, blocks, 32});
}

// Nibbles in row pairs (pair_code_rows; any shape holding `pairs` pairs of rows of `row_bytes`)
// as [pairs, 2, row_bytes]: rows 2p and 2p + 1 row after row.
Value unpaired_rows(Value paired, int64_t pairs, int64_t row_bytes) {
  const int64_t lines = row_bytes / kCodeLineBytes;
  Value by_line = reshape(paired, {pairs, lines, 2, kCodeLineBytes});
  return reshape(transpose(by_line, {0, 2, 1, 3}), {pairs, 2, row_bytes});
}

// The values E2M1 codes (i8 nibbles, 0 to 15) stand for, doubled (kE2M1Doubled), formed from
// their bits: magnitude m = bits 2:0 is m itself below 2, else (2 + m % 2) * 2^(m / 2) / 2;
// bit 3 is the sign (a negated 0 stays 0, as kE2M1Doubled has it).
Value e2m1_doubled(Value nibbles) {
  Block& b = nibbles.block();
  auto c = [&](int value) { return constant(b, nibbles.type(), value); };
  const Value m = logical_and(nibbles, c(7));
  const Value normal = shift_right_logical(
      shift_left(c(2) + logical_and(m, c(1)), shift_right_logical(m, c(1))), c(1));
  const Value magnitude = select(compare(m, c(2), Direction::kLT), m, normal);
  return select(compare(nibbles, c(8), Direction::kGE), -magnitude, magnitude);
}

// E8M0 exponents (their bytes as i8) as the f32 scales of E2M1's doubled values, 2^(e - 128):
// the bits (e - 1) << 23, or below e = 2 the subnormal 0x00200000 << e (e8m0_half_scale).
Value e8m0_half_scales(Value exponents) {
  Block& b = exponents.block();
  const Value e = logical_and(convert(exponents, ElementType::kI32),
                              constant(b, exponents.type().with_element(ElementType::kI32), 0xFF));
  auto c = [&](int64_t value) { return constant(b, e.type(), static_cast<double>(value)); };
  const Value bits = select(compare(e, c(2), Direction::kLT), shift_left(c(0x00200000), e),
                            shift_left(e - c(1), c(23)));
  return bitcast_convert(bits, ElementType::kF32);
}

// The codes of a planar weight by group, i8 [rows, cols / group, group].
Value codes_by_group(const Weight& weight) {
  const int64_t rows = weight.rows();
  const int64_t groups = weight.scales->shape()[1];
  const int64_t group = weight.cols() / groups;
  if (weight.code_bits == 8) return reshape(weight.values, {rows, groups, group});
  // Nibbles (model_files/planar_blocks.h): byte j of 32 elements' 16 holds elements j and j + 16.
  const int64_t blocks = weight.cols() / 32;
  const Value nibbles = weight.paired_rows
                            ? unpaired_rows(weight.values, rows / 2, weight.values.shape()[1])
                            : weight.values;
  Value packed = reshape(nibbles, {rows, blocks, 16});
  Block& b = packed.block();
  Value low = logical_and(packed, constant(b, packed.type(), 0x0F));
  Value high = shift_right_logical(packed, constant(b, packed.type(), 4));
  Value codes = concatenate({low, high}, 2);
  if (weight.e2m1) codes = e2m1_doubled(codes);
  if (weight.high_bits) codes = codes + high_bits_by_32(weight);
  if (weight.code_bias != 0) codes = codes + constant(b, codes.type(), weight.code_bias);
  return reshape(codes, {rows, groups, group});
}

// Rows `ids` of a planar weight's codes, [T, row bytes] row after row.
Value taken_codes(const Weight& weight, Value ids) {
  if (!weight.paired_rows) return take(weight.values, ids);
  // Each id's pair, both rows unpaired ([2T, row bytes]), then the id's own row: 2t + id % 2.
  const int64_t tokens = ids.shape()[0], row_bytes = weight.values.shape()[1];
  Block& b = ids.block();
  const Value two = constant(b, ids.type(), 2);
  const Value pairs = reshape(weight.values, {weight.rows() / 2, 2 * row_bytes});
  const Value both =
      reshape(unpaired_rows(take(pairs, ids / two), tokens, row_bytes), {2 * tokens, row_bytes});
  return take(both, iota(b, ids.type(), 0) * two + remainder(ids, two));
}

}  // namespace

std::vector<WeightSpec> resident_weight_specs(const ModelConfig& config,
                                              std::vector<WeightSpec> logical, WeightType weights) {
  if (weights != WeightType::kAuto) return logical;
  std::vector<WeightSpec> resident;
  for (WeightSpec& spec : logical) {
    const std::optional<DType> stored = stored_type(config, spec);
    spec.element = ElementType::kF32;
    // Vectors, computed weights, weights adjusted at load and missing tensors (the loader names
    // those) stay f32.
    if (spec.rope_inv_freq || !stored || spec.shape.size() < 2 || spec.gguf_add != 0.0f) {
      resident.push_back(std::move(spec));
      continue;
    }
    if (*stored == DType::kF16 || *stored == DType::kBF16) {
      spec.element = *stored == DType::kF16 ? ElementType::kF16 : ElementType::kBF16;
      resident.push_back(std::move(spec));
      continue;
    }
    if (!is_block_quantized(*stored)) {
      resident.push_back(std::move(spec));
      continue;
    }
    // Planes keep a matrix's leading axes (stacked experts' [E, rows, ...]); columns are last.
    const int64_t cols = spec.shape.back();
    auto with_columns = [&](int64_t columns) {
      std::vector<int64_t> shape = spec.shape;
      shape.back() = columns;
      return shape;
    };
    const int64_t groups = cols / planar_group_size(*stored);
    const int code_bits = planar_code_bits(*stored);
    const bool nibbles = code_bits < 8;
    const bool e2m1 = planar_codes_are_e2m1(*stored);
    // A column split cuts every plane at the same whole blocks: 32 elements (a group, a byte run
    // of nibbles or high bits), or the K-quants' 256-element super-groups.
    const bool two_level = planar_scales_are_two_level(*stored);
    const int64_t block = two_level ? kSuperGroupSize : 32;
    WeightSpec codes = spec;
    codes.name += e2m1 ? "_e2m1_nibbles" : nibbles ? "_nibbles" : "_codes";
    codes.column_granule = nibbles ? block / 2 : block;
    if (nibbles) codes.shape.back() /= 2;
    codes.element = ElementType::kI8;
    codes.part = WeightPart::kCodes;
    codes.stored = *stored;
    WeightSpec high_bits = codes;
    high_bits.name = spec.name + "_high_bits";
    high_bits.shape.back() = high_bits_row_bytes(code_bits, cols);
    high_bits.column_granule = high_bits_row_bytes(code_bits, block);
    high_bits.part = WeightPart::kHighBits;
    WeightSpec scales = codes;
    scales.name = spec.name + "_scales";
    scales.shape = with_columns(groups);
    scales.element = two_level || e2m1                ? ElementType::kI8
                     : planar_scales_are_f16(*stored) ? ElementType::kF16
                                                      : ElementType::kF32;
    scales.part = WeightPart::kScales;
    scales.column_granule = block / planar_group_size(*stored);
    WeightSpec super_scales = scales;
    super_scales.name = spec.name + "_super_scales";
    super_scales.shape = with_columns(cols / kSuperGroupSize);
    super_scales.column_granule = 1;
    super_scales.element = ElementType::kF16;
    super_scales.part = WeightPart::kSuperScales;
    resident.push_back(codes);
    if (high_bits.shape.back() > 0) resident.push_back(high_bits);
    resident.push_back(scales);
    if (two_level) resident.push_back(super_scales);
    if (planar_has_offsets(*stored)) {
      WeightSpec offsets = scales;
      offsets.name = spec.name + "_offsets";
      offsets.part = WeightPart::kOffsets;
      resident.push_back(offsets);
      if (two_level) {
        WeightSpec super_offsets = super_scales;
        super_offsets.name = spec.name + "_super_offsets";
        super_offsets.part = WeightPart::kSuperOffsets;
        resident.push_back(super_offsets);
      }
    }
  }
  return resident;
}

std::vector<WeightSpec> paired_nibble_specs(std::vector<WeightSpec> specs) {
  for (WeightSpec& spec : specs) {
    if (spec.part != WeightPart::kCodes || spec.expert || spec.shape.size() != 2 ||
        planar_codes_are_e2m1(spec.stored)) {
      continue;
    }
    if (!can_pair_code_rows(planar_code_bits(spec.stored), spec.shape[0], spec.shape[1] * 2)) {
      continue;
    }
    const std::string nibbles = "_nibbles";
    spec.name = spec.name.substr(0, spec.name.size() - nibbles.size()) + "_paired_nibbles";
    spec.paired_rows = true;
  }
  return specs;
}

Weight::Weight(Value codes, Value scale_plane, std::optional<Value> offset_plane, int bits,
               bool e2m1_codes)
    : values(codes),
      scales(scale_plane),
      offsets(offset_plane),
      widen(true),
      code_bits(bits),
      code_bias(packed_code_bias(bits, offset_plane.has_value(), e2m1_codes)),
      e2m1(e2m1_codes) {}

Weight resident_weight(const std::map<std::string, Value>& arguments, const std::string& name,
                       bool widen, const lowering::PlanarKernel* kernel) {
  // The codes under whichever name says how they are kept.
  auto codes = arguments.find(name + "_codes");
  const bool nibbles = codes == arguments.end();
  if (nibbles) codes = arguments.find(name + "_nibbles");
  bool e2m1 = false, paired = false;
  if (codes == arguments.end()) {
    codes = arguments.find(name + "_e2m1_nibbles");
    e2m1 = codes != arguments.end();
  }
  if (codes == arguments.end()) {
    codes = arguments.find(name + "_paired_nibbles");
    paired = codes != arguments.end();
  }
  if (codes == arguments.end()) {
    Weight weight(arguments.at(name));
    weight.widen = widen;
    weight.kernel = kernel;
    return weight;
  }
  auto optional_argument = [&](const std::string& suffix) -> std::optional<Value> {
    auto found = arguments.find(name + suffix);
    if (found == arguments.end()) return std::nullopt;
    return found->second;
  };
  // 5- and 6-bit codes: a high-bits plane of 1 or 2 bits per element beside the nibbles.
  const std::optional<Value> high_bits = optional_argument("_high_bits");
  const int64_t cols = codes->second.shape().back() * 2;
  const int code_bits = !nibbles    ? 8
                        : high_bits ? 4 + static_cast<int>(high_bits->shape().back() * 8 / cols)
                                    : 4;
  Weight weight(codes->second, arguments.at(name + "_scales"), optional_argument("_offsets"),
                code_bits, e2m1);
  weight.high_bits = high_bits;
  weight.super_scales = optional_argument("_super_scales");
  weight.super_offsets = optional_argument("_super_offsets");
  weight.paired_rows = paired;
  weight.kernel = kernel;
  return weight;
}

Weight expert_matrix(const Weight& stacked, Value index) {
  Weight one = stacked;
  // Each plane's [1, rows, n] at the expert, as [rows, n].
  auto at_index = [&](Value plane) {
    std::vector<int64_t> sizes = plane.shape();
    const Value zero = constant(index.block(), index.type(), 0.0);
    std::vector<Value> start(sizes.size(), zero);
    start[0] = index;
    sizes[0] = 1;
    Value slice = dynamic_slice(plane, start, sizes);
    sizes.erase(sizes.begin());
    return reshape(slice, sizes);
  };
  // Clamped into the stack as the slices clamp it, for a kernel that reads the stack at it.
  const int64_t experts = stacked.values.shape()[0];
  Block& b = index.block();
  one.stack = std::make_shared<const Weight>(stacked);
  one.expert = maximum(minimum(index, constant(b, index.type(), static_cast<double>(experts - 1))),
                       constant(b, index.type(), 0.0));
  one.values = at_index(stacked.values);
  for (auto plane : {&Weight::scales, &Weight::offsets, &Weight::super_scales,
                     &Weight::super_offsets, &Weight::high_bits}) {
    if (stacked.*plane) one.*plane = at_index(*(stacked.*plane));
  }
  return one;
}

Weight captured_in(Block& block, const Weight& weight) {
  Weight inside = weight;
  inside.values = block.capture(weight.values);
  for (auto plane : {&Weight::scales, &Weight::offsets, &Weight::super_scales,
                     &Weight::super_offsets, &Weight::high_bits, &Weight::expert}) {
    if (weight.*plane) inside.*plane = block.capture(*(weight.*plane));
  }
  if (weight.stack)
    inside.stack = std::make_shared<const Weight>(captured_in(block, *weight.stack));
  return inside;
}

lowering::PlanarOperands planar_operands(const Weight& weight) {
  // An expert goes to a kernel that reads experts as the stack and its index: the slices are then
  // left unused (and dropped by the compiler).
  if (weight.stack && weight.kernel != nullptr && weight.kernel->reads_experts()) {
    lowering::PlanarOperands operands = planar_operands(*weight.stack);
    operands.expert = weight.expert;
    return operands;
  }
  return {weight.values,      weight.code_bits,    weight.code_bias,     *weight.scales,
          weight.offsets,     weight.super_scales, weight.super_offsets, weight.high_bits,
          weight.paired_rows, weight.e2m1,         std::nullopt};
}

Value dequantized_groups(const Weight& weight) {
  const int64_t rows = weight.rows();
  const int64_t groups = weight.scales->shape()[1];
  const int64_t group = weight.cols() / groups;
  const std::vector<int64_t> shape = {rows, groups, group};
  Value codes = convert(codes_by_group(weight), ElementType::kF32);
  // f16 scales and offsets widen exactly, two-level ones multiply out exactly (each factor's
  // significant bits fit f32's together); then two roundings, as the gguf package: scale * code,
  // then + offset (never fused).
  auto by_group = [&](Value plane, const std::optional<Value>& super) {
    if (weight.e2m1) plane = e8m0_half_scales(plane);
    if (plane.element() != ElementType::kF32) plane = convert(plane, ElementType::kF32);
    if (super) {
      const int64_t supers = super->shape()[1];
      Value factor = broadcast_in_dim(convert(*super, ElementType::kF32),
                                      {rows, supers, groups / supers}, {0, 1});
      plane = reshape(factor, {rows, groups}) * plane;
    }
    return broadcast_in_dim(plane, shape, {0, 1});
  };
  Value values = by_group(*weight.scales, weight.super_scales) * codes;
  if (weight.offsets) values = values + by_group(*weight.offsets, weight.super_offsets);
  return values;
}

Value dequantized(const Weight& weight) {
  if (weight.planar()) return reshape(dequantized_groups(weight), {weight.rows(), weight.cols()});
  if (weight.values.element() == ElementType::kF32) return weight.values;
  return convert(weight.values, ElementType::kF32);
}

bool wide_kernel_takes(const Weight& weight, int64_t rows) {
  return !weight.planar() && weight.widen && weight.kernel != nullptr &&
         weight.values.shape().size() == 2 &&
         weight.kernel->handles_wide(rows, weight.values.element(), weight.cols());
}

Value take_rows(const Weight& weight, Value ids) {
  // The kernel reads the values at any address: a model file's embedding is used where it is
  // mapped (lowering::Readers).
  if (wide_kernel_takes(weight, ids.shape()[0])) {
    return weight.kernel->take_wide_rows(weight.values, ids);
  }
  Value rows;
  if (!weight.planar()) {
    rows = dequantized(Weight(take(weight.values, ids)));
  } else {
    auto taken = [&](const std::optional<Value>& plane) -> std::optional<Value> {
      if (!plane) return std::nullopt;
      return take(*plane, ids);
    };
    Weight looked_up(taken_codes(weight, ids), take(*weight.scales, ids), taken(weight.offsets),
                     weight.code_bits, weight.e2m1);
    looked_up.super_scales = taken(weight.super_scales);
    looked_up.high_bits = taken(weight.high_bits);
    looked_up.super_offsets = taken(weight.super_offsets);
    rows = dequantized(looked_up);
  }
  // Several looked-up rows are computed on their own. IREE llvm-cpu would otherwise fuse the
  // gather into its consumer, and where that reduces over the row (the first RMSNorm) it stages
  // the gathered rows of a tile whole on the stack: 4 to 8 rows x cols f32, 64 KiB at hidden 2048
  // (Llama-3.2-1B prefill), over its 32 KiB limit from hidden 1024 on with 32 or more rows. One
  // row (a decode step of one sequence) stages one row, and goes without: IREE waits on the host
  // for the values a barrier holds, splitting the call in two submissions, a delay on every step
  // (docs/PERFORMANCE.md, "Embedding lookup barrier").
  return ids.shape()[0] > 1 ? optimization_barrier(rows) : rows;
}

}  // namespace xlacel::models
