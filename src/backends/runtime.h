#pragma once
// A runtime as opened: its device (device/device.h: load, upload, execute, read) and its
// lowering (lowering/lowering.h: the forms weights are kept in and the kernels graphs run), the
// two halves the executor is given.
#include <memory>

#include "device/device.h"
#include "lowering/lowering.h"

namespace xlacel::backends {

struct Runtime {
  std::unique_ptr<device::Device> device;
  std::unique_ptr<lowering::Lowering> lowering;
};

}  // namespace xlacel::backends
