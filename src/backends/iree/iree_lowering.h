#pragma once
// IREE's lowering (lowering/lowering.h): on the CPU, the hand-written kernels of
// src/backends/iree/kernels (the planar product, exact and --math fast's int8 one, and the
// attention) for the instruction sets this CPU has, 4-bit codes in the row pairs they read, and
// bytes used where they are mapped; on CUDA, the graphs' own StableHLO on f32 copies.
#include <memory>

#include "device/device.h"
#include "lowering/lowering.h"

namespace xlacel::backends {

// The lowering of an IREE device opened with `options`.
std::unique_ptr<lowering::Lowering> make_iree_lowering(const device::DeviceOptions& options);

}  // namespace xlacel::backends
