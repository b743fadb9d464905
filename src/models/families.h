#pragma once
// Every decoder family, each a DecoderFamily (decoder_family.h) over the shared graph context in
// its own family_<name>.cpp; transformers' modeling_<type>.py is the reference for each.
#include "models/architecture.h"

namespace xlacel::models {

const Architecture& llama_architecture();      // llama, mistral, qwen2, smollm3
const Architecture& qwen3_architecture();      // qwen3: per-head q/k RMSNorm
const Architecture& qwen3_moe_architecture();  // qwen3_moe: Qwen 3 with a mixture of experts
const Architecture& gemma3_architecture();     // gemma3_text (GGUF gemma3)
const Architecture& gemma2_architecture();     // gemma2
const Architecture& granite_architecture();    // granite: embedding/residual/attention/logit scales
const Architecture& olmo2_architecture();      // olmo2: post-norms, q/k norm across heads
const Architecture& olmoe_architecture();      // olmoe: q/k norm across heads, experts
const Architecture& phi3_architecture();       // phi3: fused qkv and gate_up, partial rotary
const Architecture& stablelm_architecture();   // stablelm: LayerNorm, qkv bias, partial rotary
const Architecture& starcoder2_architecture();  // starcoder2: LayerNorm, biases, GELU MLP
const Architecture& cohere_architecture();  // cohere: parallel block, interleaved RoPE, logit scale
const Architecture& mixtral_architecture();  // mixtral: Llama with a mixture of experts
const Architecture& lfm2_architecture();     // lfm2: short convolutions beside attention
const Architecture& gpt_oss_architecture();  // gpt_oss: attention sinks, biased experts
// granitemoehybrid (GGUF granitehybrid): Mamba-2 beside attention, a shared MLP beside experts
const Architecture& granite_hybrid_architecture();

}  // namespace xlacel::models
