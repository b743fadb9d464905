#pragma once
// A model as it sits on disk, opened from either source: an HF directory (config.json,
// *.safetensors single or sharded, tokenizer.json, tokenizer_config.json,
// generation_config.json) or a GGUF file. Weights stay memory-mapped; tensors are views.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model_files/gguf_file.h"
#include "model_files/model_config.h"
#include "model_files/safetensors_file.h"
#include "model_files/tensor.h"

namespace xlacel {

struct ChatTemplateSource {
  std::string text;
  std::string origin;  // where it came from, for error messages
};

class ModelFiles {
 public:
  enum class Format { kHuggingFaceDirectory, kGguf };

  // A directory is read as HF, a file as GGUF. Throws Error naming the file and the problem.
  static ModelFiles open(const std::string& path);

  Format format() const { return format_; }
  const std::string& path() const { return path_; }
  // For names of derived files: the GGUF file's stem ("SmolLM2-135M-Instruct.Q4_1") or the HF
  // directory's name.
  std::string name() const;
  const ModelConfig& config() const { return config_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  std::optional<TensorView> find_tensor(const std::string& name) const;
  // Drops a tensor's file pages from the resident set once it has been copied (uploaded or
  // converted): MappedFile::release.
  void release(const TensorView& tensor) const;
  // The open file whose mapping holds a tensor's bytes (null for bytes of no file of this
  // model): while it lives, they stay mapped, so a device may compute on them in place.
  std::shared_ptr<const void> holder(const TensorView& tensor) const;

  // Tokenizer inputs: the GGUF file itself, or the path of tokenizer.json (empty if absent).
  const GgufFile* gguf() const { return gguf_.get(); }
  const std::string& tokenizer_json_path() const { return tokenizer_json_path_; }
  const std::optional<ChatTemplateSource>& chat_template() const { return chat_template_; }
  // Special-token strings passed to chat templates: bos_token, eos_token, unk_token, pad_token.
  const std::map<std::string, std::string>& special_token_strings() const {
    return special_token_strings_;
  }

 private:
  static ModelFiles open_hf_directory(const std::string& path);
  static ModelFiles open_gguf(const std::string& path);

  Format format_ = Format::kGguf;
  std::string path_;
  ModelConfig config_;
  std::vector<TensorView> tensors_;
  std::shared_ptr<GgufFile> gguf_;
  std::vector<std::shared_ptr<SafetensorsFile>> shards_;
  std::string tokenizer_json_path_;
  std::optional<ChatTemplateSource> chat_template_;
  std::map<std::string, std::string> special_token_strings_;
};

}  // namespace xlacel
