#pragma once
// RoPE inverse frequencies computed on the host in float32, operation for operation as
// transformers computes them (LlamaRotaryEmbedding / _compute_llama3_parameters), so the graph
// only has to form position * inv_freq and take cos/sin as HF does.
#include <span>
#include <vector>

#include "model_files/model_config.h"

namespace xlacel::models {

// inv_freq[i] = 1 / theta^(2i/dims) for the rotated dims (config.rope_dims()), llama3-smoothed when
// config.rope_scaling is kLlama3. `frequency_factors` (GGUF rope_freqs.weight, kFrequencyFactors)
// divides each frequency, which is how llama.cpp applies llama3 scaling; it must then hold
// head_dim/2 values.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config,
                                            std::span<const float> frequency_factors = {});

}  // namespace xlacel::models
