#pragma once
// How one runtime runs a model's weights and attention: the one object that decides, for a graph
// of a given row count, the form a weight stays resident in (as the file stores it: planes of a
// block format or 16-bit floats, 4-bit codes in row pairs; or an f32 copy), whether the model
// file's bytes are used where they are mapped, and which product or attention the graph runs (its
// own StableHLO, or a hand-written kernel). Each runtime provides one beside its device
// (backends/backends.h: open_runtime; backends/iree/iree_lowering.h, backends/pjrt/
// pjrt_lowering.h). The executor asks it what to keep and upload, the model graphs what to emit
// (models/graph_options.h), so the device layer (device/device.h) stays load, upload, execute,
// read. A new weight format, kernel or instruction set changes a runtime's lowering and its
// kernels, not the executor, the models or the device.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "lowering/attention_kernel.h"
#include "lowering/planar_kernel.h"

namespace xlacel::lowering {

// The graphs a product runs in: prefill (a prompt's chunk) or decode (a token per sequence).
enum class Phase { kPrefill, kDecode };

// kExact: every product in f32 on the exact weights (transformers' arithmetic). kFast (--math
// fast): products with quantized weights may round the activations to 8 bits and multiply in
// integers, as llama.cpp does; decode's round each sequence's row alike whatever it is batched
// with, so its tokens do not depend on the batch.
enum class Math { kExact, kFast };
const char* math_name(Math math);  // "exact", "fast"
std::optional<Math> parse_math(std::string_view name);

// What reads a buffer in the graphs that take it.
enum class Readers {
  kCompiledCode,  // code the runtime's compiler generated (among others), which may assume an
                  // aligned buffer
  kKernelsOnly,   // only the runtime's hand-written kernels (models::EmittedGraph)
};

class Lowering {
 public:
  virtual ~Lowering() = default;

  // Whether a graph over `rows` activation rows reads the weights as the file stores them
  // (block formats as planes, 16-bit floats narrow: --weights auto) rather than an f32 copy: where
  // this runtime's product with them is the faster one. The executor keeps each form some graph
  // reads resident.
  virtual bool reads_as_stored(int64_t rows) const {
    (void)rows;
    return false;
  }
  // The product that multiplies weights kept as stored in graphs of `phase` under `math`, or
  // nullptr for the graph's own StableHLO product. Under Math::kFast, the phase's integer product
  // where the runtime has one, else its exact one.
  virtual const PlanarKernel* planar_kernel(Phase phase, Math math) const {
    (void)phase, (void)math;
    return nullptr;
  }
  // Whether Math::kFast changes some product here (the executor refuses it where it would not).
  virtual bool has_fast_math() const { return false; }
  // The hand-written attention the graphs run where it takes their shape, or nullptr.
  virtual const AttentionKernel* attention_kernel() const { return nullptr; }
  // Whether 4-bit codes stay in row pairs (models::GraphOptions::paired_nibbles), as this
  // runtime's kernels read them fastest.
  virtual bool pairs_code_rows() const { return false; }
  // Whether weight bytes that live at least as long as the device's buffer, read in the graphs
  // by `readers`, are used where they are (device::Device::upload_in_place) rather than copied.
  virtual bool in_place(std::span<const std::byte> bytes, Readers readers) const {
    (void)bytes, (void)readers;
    return false;
  }
};

// The lowering of a runtime without hand-written kernels that reads every weight from an f32
// copy: each graph's own StableHLO, as `xlacel emit` writes it.
const Lowering& portable_lowering();

}  // namespace xlacel::lowering
