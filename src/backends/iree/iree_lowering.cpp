#include "backends/iree/iree_lowering.h"

#include <cstdint>

#include "backends/iree/iree_attention_kernel.h"
#include "backends/iree/iree_device.h"
#include "backends/iree/iree_planar_kernel.h"
#include "common/aligned_vector.h"
#include "compile_cache/compile_cache.h"

namespace xlacel::backends {

namespace {

class IreeCpuLowering final : public lowering::Lowering {
 public:
  explicit IreeCpuLowering(const device::DeviceOptions& options) {
    const std::filesystem::path cache_dir = options.compile_cache_dir.empty()
                                                ? compile_cache::CompileCache::default_directory()
                                                : options.compile_cache_dir;
    const int workers = iree_cpu_workers(options);
    planar_kernel_ = make_iree_cpu_planar_kernel(cache_dir, workers);
    int8_panels_ = make_iree_cpu_planar_kernel(cache_dir, workers, PlanarProduct::kInt8Panels);
    int8_rows_ = make_iree_cpu_planar_kernel(cache_dir, workers, PlanarProduct::kInt8Rows);
    attention_kernel_ = make_iree_cpu_attention_kernel(cache_dir, workers);
  }

  // With the hand-written product, every row count it takes beats f32 weights (it reads a sixth
  // of the bytes with 4-bit codes). Without it (a CPU without AVX2 and FMA), llvm-cpu fuses the
  // dequantization of one row into a single pass over the codes, but with 2 or more rows neither
  // fuses it into the product nor matches f32 when it dequantizes first (docs/PERFORMANCE.md).
  bool reads_as_stored(int64_t rows) const override {
    return planar_kernel_ ? planar_kernel_->handles(rows, 32, 8) : rows == 1;
  }
  const lowering::PlanarKernel* planar_kernel(lowering::Phase phase,
                                              lowering::Math math) const override {
    if (math == lowering::Math::kFast) {
      // Prefill's int8 product needs VNNI (its panels lose to the exact ones without it); where
      // there is none, prefill stays exact.
      if (phase == lowering::Phase::kDecode) return int8_rows_.get();
      if (int8_panels_ != nullptr) return int8_panels_.get();
    }
    return planar_kernel_.get();
  }
  bool has_fast_math() const override { return int8_rows_ != nullptr; }
  const lowering::AttentionKernel* attention_kernel() const override {
    return attention_kernel_.get();
  }
  // Every product reads the same resident weights (--math fast's the int8 ones).
  bool pairs_code_rows() const override {
    return planar_kernel_ != nullptr && planar_kernel_->takes_paired_rows() &&
           (int8_panels_ == nullptr || int8_panels_->takes_paired_rows()) &&
           (int8_rows_ == nullptr || int8_rows_->takes_paired_rows());
  }
  // The CPU computes in host memory. Its compiled code assumes 64-byte aligned buffers (llvm-cpu
  // emits aligned AVX-512 loads: a GGUF tensor 32 bytes off faults); the hand-written kernels
  // load at any address (kernels/kernel_vectors.h).
  bool in_place(std::span<const std::byte> bytes, lowering::Readers readers) const override {
    const bool aligned = reinterpret_cast<std::uintptr_t>(bytes.data()) % kBufferAlignment == 0;
    return !bytes.empty() && (aligned || readers == lowering::Readers::kKernelsOnly);
  }

 private:
  std::unique_ptr<lowering::PlanarKernel> planar_kernel_;        // CPU with AVX2 and FMA only
  std::unique_ptr<lowering::PlanarKernel> int8_panels_;          // and AVX-512 VBMI and VNNI
  std::unique_ptr<lowering::PlanarKernel> int8_rows_;            // AVX2 and FMA
  std::unique_ptr<lowering::AttentionKernel> attention_kernel_;  // AVX2 and FMA
};

}  // namespace

std::unique_ptr<lowering::Lowering> make_iree_lowering(const device::DeviceOptions& options) {
  if (options.kind == device::DeviceKind::kCpu) return std::make_unique<IreeCpuLowering>(options);
  // IREE CUDA: weights as stored not yet measured there (XLA CUDA: pjrt_lowering.h).
  return std::make_unique<lowering::Lowering>();
}

}  // namespace xlacel::backends
