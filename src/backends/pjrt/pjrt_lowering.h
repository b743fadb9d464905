#pragma once
// XLA's lowering (lowering/lowering.h): no hand-written kernels; on CUDA one-row products
// (decode) read the weights as stored, as XLA fuses their widening into the product.
#include <memory>

#include "device/device.h"
#include "lowering/lowering.h"

namespace xlacel::backends {

// The lowering of a PJRT device opened with `options`.
std::unique_ptr<lowering::Lowering> make_pjrt_lowering(const device::DeviceOptions& options);

}  // namespace xlacel::backends
