#pragma once
// Host tensors for the graphs' weight arguments (weight_layout.h), read from a GGUF file or an
// HF directory: dequantized or widened to f32 (bit-exact, model_files/to_f32), GGUF names mapped
// to the HF layout with llama.cpp's Q/K row permutation undone exactly as transformers does when
// it loads a GGUF (LlamaTensorProcessor._reverse_permute_weights), then narrowed to the graph's
// weight type with round-to-nearest-even.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model_files/model_files.h"
#include "models/graph_options.h"
#include "models/weight_layout.h"

namespace xlacel::models {

struct HostTensor {
  WeightSpec spec;
  std::span<const std::byte> bytes;  // little-endian elements of spec.element, row-major
  // What holds `bytes`: the values prepared for the graph (moved in, not copied), or the open
  // model file where they are its own bytes (the file stores the weight as the graph takes it:
  // nothing is copied before the device, which may compute on them in place).
  std::shared_ptr<const void> owner;
  // Set where `bytes` are the file's: that tensor, whose pages a consumer that copies them
  // releases afterwards (ModelFiles::release), so that they do not stay resident twice.
  std::optional<TensorView> file;
};

// One weight argument as f32 in HF layout (rope_inv_freq included). Throws Error naming the
// tensor when it is missing or its shape differs from the spec.
std::vector<float> load_weight_f32(const ModelFiles& files, const WeightSpec& spec);

// One weight argument in its spec's element type.
HostTensor prepare_weight(const ModelFiles& files, const WeightSpec& spec);

// Streams every weight argument, in order, one at a time (peak memory: one tensor); the
// callback copies what it keeps, or keeps the tensor's owner, and releases the pages of a
// `file` tensor it copied. paired_nibbles: as GraphOptions::paired_nibbles.
void for_each_weight(const ModelFiles& files, WeightType type, bool paired_nibbles,
                     const std::function<void(const HostTensor&)>& callback);

// Undoes llama.cpp's permute() of Q/K rows for `n_head` heads: row h*D + 2i + r of `rows`
// (GGUF order) moves to row h*D + r*D/2 + i (HF order). `columns` values per row.
// Any per-row layout permutes the same way (values, or the planes of a block format).
template <typename T, typename Allocator>
std::vector<T, Allocator> reverse_permute_rows(const std::vector<T, Allocator>& rows,
                                               int64_t n_head, int64_t columns);

}  // namespace xlacel::models
