#include "model_files/safetensors_file.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/json_file.h"

namespace xlacel {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100 * 1024 * 1024;  // the safetensors library's own cap

DType parse_dtype(const std::string& name, const std::string& path, const std::string& tensor) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  if (name == "U8") return DType::kU8;
  fail(path, "tensor '{}' has dtype '{}' (supported: F32, F16, BF16, U8)", tensor, name);
}

}  // namespace

std::vector<TensorView> parse_safetensors(std::span<const std::byte> bytes,
                                          const std::string& path) {
  if (bytes.size() < 8) fail(path, "truncated: no safetensors header length");
  uint64_t header_length;
  std::memcpy(&header_length, bytes.data(), 8);
  if (header_length > kMaxHeaderBytes) {
    fail(path, "safetensors header length {} is absurd", header_length);
  }
  if (header_length > bytes.size() - 8) {
    fail(path, "truncated: header of {} bytes but only {} follow", header_length, bytes.size() - 8);
  }
  std::string_view header_text(reinterpret_cast<const char*>(bytes.data() + 8), header_length);
  Json header = parse_json_text(header_text, path);
  if (!header.is_object()) fail(path, "safetensors header is not a JSON object");

  std::span<const std::byte> data = bytes.subspan(8 + header_length);
  std::vector<TensorView> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(path, "__metadata__ is not an object");
      continue;
    }
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
        !entry.contains("shape") || !entry["shape"].is_array() || !entry.contains("data_offsets") ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2) {
      fail(path, "tensor '{}' needs dtype (string), shape (array) and data_offsets ([begin, end])",
           name);
    }
    TensorView view;
    view.name = name;
    view.dtype = parse_dtype(entry["dtype"].get<std::string>(), path, name);
    for (const Json& dim : entry["shape"]) {
      if (!dim.is_number_unsigned()) fail(path, "tensor '{}' has a non-integer dimension", name);
      view.shape.push_back(
          static_cast<int64_t>(std::min<uint64_t>(dim.get<uint64_t>(), 1ull << 62)));
    }
    const Json& offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      fail(path, "tensor '{}' has non-integer data_offsets", name);
    }
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > data.size()) {
      fail(path, "tensor '{}' data_offsets [{}, {}] are outside the {} data bytes", name, begin,
           end, data.size());
    }
    uint64_t expected = tensor_byte_size(view.dtype, view.shape, path + ": tensor '" + name + "'");
    if (end - begin != expected) {
      fail(path, "tensor '{}' spans {} bytes but its dtype and shape need {}", name, end - begin,
           expected);
    }
    view.data = data.subspan(begin, end - begin);
    tensors.push_back(std::move(view));
  }

  // Like the reference library: tensors tile the data section exactly, no overlap, no holes.
  std::vector<const TensorView*> by_offset;
  for (const TensorView& t : tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorView* a, const TensorView* b) {
    return a->data.data() < b->data.data();
  });
  uint64_t cursor = 0;
  for (const TensorView* t : by_offset) {
    auto begin = static_cast<uint64_t>(t->data.data() - data.data());
    if (begin != cursor) {
      fail(path, "tensor '{}' starts at {} but the previous tensor ends at {} ({})", t->name, begin,
           cursor, begin < cursor ? "overlap" : "gap");
    }
    cursor = begin + t->data.size();
  }
  if (cursor != data.size()) {
    fail(path, "tensors cover {} of the {} data bytes", cursor, data.size());
  }
  return tensors;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : file_(std::make_unique<MappedFile>(path)),
      tensors_(parse_safetensors(file_->bytes(), path)) {}

}  // namespace xlacel
