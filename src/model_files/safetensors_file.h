#pragma once
// safetensors reader: an 8-byte little-endian header length, a JSON header, then raw tensor
// bytes. The header is validated in full (sane length, known dtypes, dtype x shape = bytes,
// offsets in bounds, contiguous and non-overlapping) before any tensor is handed out.
#include <memory>
#include <string>
#include <vector>

#include "common/mapped_file.h"
#include "model_files/tensor.h"

namespace xlacel {

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // throws Error naming path

  const std::string& path() const { return file_->path(); }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  // See MappedFile::release and holds.
  void release(const TensorView& tensor) const { file_->release(tensor.data); }
  bool holds(const TensorView& tensor) const { return file_->holds(tensor.data); }

 private:
  std::unique_ptr<MappedFile> file_;
  std::vector<TensorView> tensors_;
};

// Header parsing on bytes already in memory (the fuzz harness drives this directly).
std::vector<TensorView> parse_safetensors(std::span<const std::byte> bytes,
                                          const std::string& path);

}  // namespace xlacel
