#pragma once
// How a tensor lies on a device that spans several devices (Device::partitions(), tensor
// parallelism over the one mesh axis "tp"): whole on each of them (replicated), or cut into equal
// slices along one axis, slice i on device i. Header only: the models that choose a sharding
// (models/tensor_parallel.h) and the runtimes that place the slices both read it.
#include <cstdint>
#include <span>
#include <vector>

namespace xlacel::stablehlo {

struct Sharding {
  int axis = -1;  // the axis cut over the devices; -1: replicated

  bool replicated() const { return axis < 0; }
  static Sharding split(int axis) { return Sharding{axis}; }
  friend bool operator==(const Sharding&, const Sharding&) = default;
};

// The shape of one device's slice of `shape` cut `parts` ways by `sharding` (the caller checks
// that the axis divides).
inline std::vector<int64_t> shard_shape(std::span<const int64_t> shape, const Sharding& sharding,
                                        int64_t parts) {
  std::vector<int64_t> slice(shape.begin(), shape.end());
  if (!sharding.replicated()) slice[static_cast<std::size_t>(sharding.axis)] /= parts;
  return slice;
}

}  // namespace xlacel::stablehlo
