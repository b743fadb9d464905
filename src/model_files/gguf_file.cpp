#include "model_files/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "common/error.h"
#include "common/utf8.h"

namespace xlacel {

namespace {

constexpr uint32_t kMaxDims = 4;     // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;  // real files nest at most once
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;

// Reads little-endian values from the mapped header; every read is bounds-checked so a corrupt
// count or length fails with a message instead of reading past the end.
class HeaderReader {
 public:
  HeaderReader(std::span<const std::byte> bytes, const std::string& path)
      : bytes_(bytes), path_(path) {}

  uint64_t position() const { return position_; }
  uint64_t remaining() const { return bytes_.size() - position_; }

  template <typename T>
  T read(const char* what) {
    require(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }

  std::string read_string(const char* what) {
    uint64_t length = read<uint64_t>(what);
    if (length > kMaxStringBytes) fail(path_, "{} has an absurd length {}", what, length);
    require(length, what);
    std::string text(reinterpret_cast<const char*>(bytes_.data() + position_), length);
    position_ += length;
    if (!utf8::is_valid(text)) fail(path_, "{} is not valid UTF-8", what);
    return text;
  }

  // A count of items each at least `min_item_bytes` long cannot exceed what is left.
  void check_count(uint64_t count, uint64_t min_item_bytes, const char* what) const {
    if (count > remaining() / min_item_bytes) {
      fail(path_, "{} {} does not fit in the {} bytes left in the file", what, count, remaining());
    }
  }

 private:
  void require(uint64_t n, const char* what) const {
    if (n > remaining()) {
      fail(path_, "truncated: {} at byte {} needs {} bytes, {} left", what, position_, n,
           remaining());
    }
  }

  std::span<const std::byte> bytes_;
  const std::string& path_;
  uint64_t position_ = 0;
};

std::size_t scalar_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
    case GgufValueType::kString:  // its u64 length
    case GgufValueType::kArray:
      return 8;
  }
  return 1;
}

GgufValueType read_type(HeaderReader& reader, const std::string& path, const std::string& key) {
  uint32_t raw = reader.read<uint32_t>("value type");
  if (raw > static_cast<uint32_t>(GgufValueType::kFloat64)) {
    fail(path, "metadata '{}' has unknown value type {}", key, raw);
  }
  return static_cast<GgufValueType>(raw);
}

GgufValue read_value(HeaderReader& reader, GgufValueType type, const std::string& path,
                     const std::string& key, int depth) {
  GgufValue value;
  value.type = type;
  switch (type) {
    case GgufValueType::kUint8:
      value.value = uint64_t{reader.read<uint8_t>("u8")};
      break;
    case GgufValueType::kInt8:
      value.value = int64_t{reader.read<int8_t>("i8")};
      break;
    case GgufValueType::kUint16:
      value.value = uint64_t{reader.read<uint16_t>("u16")};
      break;
    case GgufValueType::kInt16:
      value.value = int64_t{reader.read<int16_t>("i16")};
      break;
    case GgufValueType::kUint32:
      value.value = uint64_t{reader.read<uint32_t>("u32")};
      break;
    case GgufValueType::kInt32:
      value.value = int64_t{reader.read<int32_t>("i32")};
      break;
    case GgufValueType::kUint64:
      value.value = reader.read<uint64_t>("u64");
      break;
    case GgufValueType::kInt64:
      value.value = reader.read<int64_t>("i64");
      break;
    case GgufValueType::kFloat32:
      value.value = double{reader.read<float>("f32")};
      break;
    case GgufValueType::kFloat64:
      value.value = reader.read<double>("f64");
      break;
    case GgufValueType::kBool: {
      uint8_t raw = reader.read<uint8_t>("bool");
      if (raw > 1) fail(path, "metadata '{}' has bool value {}", key, raw);
      value.value = raw == 1;
      break;
    }
    case GgufValueType::kString:
      value.value = reader.read_string("string value");
      break;
    case GgufValueType::kArray: {
      if (depth >= kMaxArrayNesting) fail(path, "metadata '{}' nests arrays too deeply", key);
      GgufArray array;
      array.element_type = read_type(reader, path, key);
      uint64_t count = reader.read<uint64_t>("array length");
      reader.check_count(count, scalar_size(array.element_type), "array length");
      array.items.reserve(count);
      for (uint64_t i = 0; i < count; ++i) {
        array.items.push_back(read_value(reader, array.element_type, path, key, depth + 1));
      }
      value.value = std::move(array);
      break;
    }
  }
  return value;
}

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  switch (ggml_type) {
    case 0:
      return DType::kF32;
    case 1:
      return DType::kF16;
    case 2:
      return DType::kQ4_0;
    case 3:
      return DType::kQ4_1;
    case 6:
      return DType::kQ5_0;
    case 7:
      return DType::kQ5_1;
    case 8:
      return DType::kQ8_0;
    case 12:
      return DType::kQ4_K;
    case 13:
      return DType::kQ5_K;
    case 14:
      return DType::kQ6_K;
    case 30:
      return DType::kBF16;
    case 39:
      return DType::kMXFP4;
    default:
      return std::nullopt;
  }
}

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
  static constexpr const char* kNames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                           "int32",  "float32", "bool",   "string", "array",
                                           "uint64", "int64",   "float64"};
  auto index = static_cast<std::size_t>(type);
  return index < std::size(kNames) ? kNames[index] : "unknown";
}

GgufFile::GgufFile(const std::string& path) : file_(std::make_unique<MappedFile>(path)) {
  HeaderReader reader(file_->bytes(), path);
  if (file_->size() < 4 || std::memcmp(file_->bytes().data(), "GGUF", 4) != 0) {
    fail(path, "not a GGUF file (wrong magic)");
  }
  reader.read<uint32_t>("magic");
  version_ = reader.read<uint32_t>("version");
  if (version_ == 1) fail(path, "GGUF version 1 is not supported (need 2 or 3)");
  if (version_ != 2 && version_ != 3) {
    if ((version_ & 0xFFFF) == 0) fail(path, "big-endian GGUF is not supported");
    fail(path, "unsupported GGUF version {} (need 2 or 3)", version_);
  }
  uint64_t tensor_count = reader.read<uint64_t>("tensor count");
  uint64_t kv_count = reader.read<uint64_t>("metadata count");
  reader.check_count(kv_count, 8 + 4 + 1, "metadata count");
  reader.check_count(tensor_count, 8 + 4 + 8 + 4 + 8, "tensor count");

  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = reader.read_string("metadata key");
    GgufValueType type = read_type(reader, path, key);
    GgufValue value = read_value(reader, type, path, key, 0);
    if (!metadata_.emplace(key, std::move(value)).second) {
      fail(path, "metadata key '{}' appears twice", key);
    }
  }

  if (const GgufValue* alignment = find("general.alignment")) {
    const auto* raw = std::get_if<uint64_t>(&alignment->value);
    if (alignment->type != GgufValueType::kUint32 || raw == nullptr || *raw == 0 ||
        (*raw & (*raw - 1)) != 0) {
      fail(path, "general.alignment must be a power-of-two uint32");
    }
    alignment_ = *raw;
  }

  std::set<std::string> names;
  tensor_infos_.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo info;
    info.name = reader.read_string("tensor name");
    if (!names.insert(info.name).second) fail(path, "tensor '{}' appears twice", info.name);
    uint32_t dims = reader.read<uint32_t>("tensor dimension count");
    if (dims == 0 || dims > kMaxDims) {
      fail(path, "tensor '{}' has {} dimensions (1 to {} allowed)", info.name, dims, kMaxDims);
    }
    for (uint32_t d = 0; d < dims; ++d) {
      uint64_t extent = reader.read<uint64_t>("tensor dimension");
      if (extent > (uint64_t{1} << 40)) {
        fail(path, "tensor '{}' has an absurd dimension {}", info.name, extent);
      }
      info.ggml_shape.push_back(extent);
    }
    uint32_t ggml_type = reader.read<uint32_t>("tensor type");
    auto dtype = dtype_from_ggml(ggml_type);
    if (!dtype) fail(path, "tensor '{}' has unsupported ggml type {}", info.name, ggml_type);
    info.dtype = *dtype;
    info.offset = reader.read<uint64_t>("tensor offset");
    if (info.offset % alignment_ != 0) {
      fail(path, "tensor '{}' offset {} is not aligned to {}", info.name, info.offset, alignment_);
    }
    tensor_infos_.push_back(std::move(info));
  }

  data_offset_ = (reader.position() + alignment_ - 1) / alignment_ * alignment_;
  if (data_offset_ > file_->size()) fail(path, "truncated: tensor data section is missing");
  uint64_t data_size = file_->size() - data_offset_;

  // Every tensor must lie inside the data section and no two may overlap.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const GgufTensorInfo& info : tensor_infos_) {
    std::vector<int64_t> shape(info.ggml_shape.rbegin(), info.ggml_shape.rend());
    uint64_t bytes = tensor_byte_size(info.dtype, shape, path + ": tensor '" + info.name + "'");
    if (info.offset > data_size || bytes > data_size - info.offset) {
      fail(path, "tensor '{}' ({} bytes at offset {}) runs past the end of the file", info.name,
           bytes, info.offset);
    }
    ranges.emplace_back(info.offset, info.offset + bytes);
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      fail(path, "tensor data ranges overlap at offset {}", ranges[i].first);
    }
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

namespace {
const GgufValue& require_key(const GgufFile& file, const std::string& key) {
  const GgufValue* value = file.find(key);
  if (value == nullptr) fail(file.path(), "metadata '{}' is missing", key);
  return *value;
}

[[noreturn]] void wrong_type(const GgufFile& file, const std::string& key, const GgufValue& value,
                             const char* wanted) {
  fail(file.path(), "metadata '{}' is {}, expected {}", key, gguf_value_type_name(value.type),
       wanted);
}

std::optional<int64_t> as_int(const GgufValue& value) {
  if (const auto* u = std::get_if<uint64_t>(&value.value)) {
    if (*u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&value.value)) return *i;
  return std::nullopt;
}

const GgufArray& require_array(const GgufFile& file, const std::string& key) {
  const GgufValue& value = require_key(file, key);
  const auto* array = std::get_if<GgufArray>(&value.value);
  if (array == nullptr) wrong_type(file, key, value, "array");
  return *array;
}
}  // namespace

std::string GgufFile::get_string(const std::string& key) const {
  const GgufValue& value = require_key(*this, key);
  const auto* text = std::get_if<std::string>(&value.value);
  if (text == nullptr) wrong_type(*this, key, value, "string");
  return *text;
}

int64_t GgufFile::get_int(const std::string& key) const {
  const GgufValue& value = require_key(*this, key);
  auto result = as_int(value);
  if (!result) wrong_type(*this, key, value, "integer");
  return *result;
}

uint64_t GgufFile::get_uint(const std::string& key) const {
  int64_t value = get_int(key);
  if (value < 0) fail(path(), "metadata '{}' is negative ({})", key, value);
  return static_cast<uint64_t>(value);
}

double GgufFile::get_float(const std::string& key) const {
  const GgufValue& value = require_key(*this, key);
  const auto* number = std::get_if<double>(&value.value);
  if (number == nullptr) wrong_type(*this, key, value, "float");
  return *number;
}

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue& value = require_key(*this, key);
  const auto* flag = std::get_if<bool>(&value.value);
  if (flag == nullptr) wrong_type(*this, key, value, "bool");
  return *flag;
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const GgufArray& array = require_array(*this, key);
  if (array.element_type != GgufValueType::kString) {
    fail(path(), "metadata '{}' is an array of {}, expected strings", key,
         gguf_value_type_name(array.element_type));
  }
  std::vector<std::string> out;
  out.reserve(array.items.size());
  for (const GgufValue& item : array.items) out.push_back(std::get<std::string>(item.value));
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  const GgufArray& array = require_array(*this, key);
  std::vector<int64_t> out;
  out.reserve(array.items.size());
  for (const GgufValue& item : array.items) {
    auto number = as_int(item);
    if (!number) {
      fail(path(), "metadata '{}' is an array of {}, expected integers", key,
           gguf_value_type_name(array.element_type));
    }
    out.push_back(*number);
  }
  return out;
}

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
  const GgufArray& array = require_array(*this, key);
  std::vector<double> out;
  out.reserve(array.items.size());
  for (const GgufValue& item : array.items) {
    const auto* number = std::get_if<double>(&item.value);
    if (number == nullptr) {
      fail(path(), "metadata '{}' is an array of {}, expected floats", key,
           gguf_value_type_name(array.element_type));
    }
    out.push_back(*number);
  }
  return out;
}

TensorView GgufFile::tensor(const GgufTensorInfo& info) const {
  TensorView view;
  view.name = info.name;
  view.dtype = info.dtype;
  view.shape.assign(info.ggml_shape.rbegin(), info.ggml_shape.rend());
  uint64_t bytes = tensor_byte_size(info.dtype, view.shape, info.name);
  view.data = file_->bytes().subspan(data_offset_ + info.offset, bytes);
  return view;
}

std::optional<TensorView> GgufFile::find_tensor(const std::string& name) const {
  for (const GgufTensorInfo& info : tensor_infos_) {
    if (info.name == name) return tensor(info);
  }
  return std::nullopt;
}

}  // namespace xlacel
