#pragma once
// GGUF v2/v3 reader: metadata key/values (every value type, nested arrays), tensor infos and
// aligned tensor data, all validated against the file size before anything is trusted.
// Tensor bytes stay in the memory map.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/mapped_file.h"
#include "model_files/tensor.h"

namespace xlacel {

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
const char* gguf_value_type_name(GgufValueType type);

struct GgufValue;
struct GgufArray {
  GgufValueType element_type = GgufValueType::kUint8;
  std::vector<GgufValue> items;
};

// Integers keep their signedness (int64_t / uint64_t); floats widen to double.
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> value;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ggml_shape;  // ggml order: ggml_shape[0] is the fastest-moving dim
  DType dtype = DType::kF32;
  uint64_t offset = 0;  // relative to the start of the data section
};

class GgufFile {
 public:
  explicit GgufFile(const std::string& path);  // throws Error naming path and the problem

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensor_infos() const { return tensor_infos_; }

  const GgufValue* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // Typed getters: a missing key or a value of another type is an Error naming file and key.
  // get_uint / get_int accept any integer type whose value fits.
  std::string get_string(const std::string& key) const;
  uint64_t get_uint(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;  // accepts float32/float64
  bool get_bool(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;
  std::vector<double> get_float_array(const std::string& key) const;

  // Tensor view with HF-order shape (outermost first, i.e. ggml_shape reversed).
  TensorView tensor(const GgufTensorInfo& info) const;
  std::optional<TensorView> find_tensor(const std::string& name) const;
  // See MappedFile::release and holds.
  void release(const TensorView& tensor) const { file_->release(tensor.data); }
  bool holds(const TensorView& tensor) const { return file_->holds(tensor.data); }

 private:
  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensor_infos_;
};

}  // namespace xlacel
