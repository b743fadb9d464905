#include "backends/pjrt/pjrt_lowering.h"

namespace xlacel::backends {

namespace {

// On CUDA a decode step's products read the weights as stored (bf16: half the bytes of the f32
// copy per token; docs/PERFORMANCE.md); with one slot prefill takes the same weights. The CPU
// keeps the f32 copy (weights as stored not measured there yet).
class PjrtCudaLowering final : public lowering::Lowering {
 public:
  bool reads_as_stored(int64_t rows) const override { return rows == 1; }
};

}  // namespace

std::unique_ptr<lowering::Lowering> make_pjrt_lowering(const device::DeviceOptions& options) {
  if (options.kind == device::DeviceKind::kCuda) return std::make_unique<PjrtCudaLowering>();
  return std::make_unique<lowering::Lowering>();
}

}  // namespace xlacel::backends
