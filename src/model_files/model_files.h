#pragma once
// A model as it sits on disk, opened from either source: an HF directory (config.json,
// *.safetensors single or sharded, tokenizer.json, tokenizer_config.json,
// generation_config.json) or a GGUF file, or a GGUF text model with llama.cpp's image encoder
// file beside it (mmproj). Weights stay memory-mapped; tensors are views.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/json_file.h"
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
  // A GGUF text model and its vision tower as llama.cpp's converter writes them
  // (convert_hf_to_gguf.py, and with --mmproj the image encoder file): the text model read as
  // open(path) reads it (format() kGguf, path() and gguf() its file); config().vision from the
  // mmproj's clip.* keys and the image token of the text model's vocabulary
  // (read_vision_config_from_gguf); the mmproj's tensors (v.*, mm.*) found by find_tensor beside
  // the text model's, by the names the vision weight specs' gguf_name give; and
  // preprocessor_config() synthesized from its keys. Error naming the file for a directory as
  // `path`, a file that is not an mmproj, a tensor name both files hold, or a projection whose
  // width is not the text model's.
  static ModelFiles open(const std::string& path, const std::string& mmproj_path);

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
  // The image encoder file opened with the text GGUF (null otherwise).
  const GgufFile* mmproj() const { return mmproj_.get(); }
  // The image processor's settings as an HF directory's preprocessor_config.json holds them:
  // that file where the directory has one, or for a GGUF with its mmproj what the mmproj's keys
  // give (preprocessor_config_from_gguf: image_mean, image_std, sizes; the processors' defaults
  // for the rest); nullopt otherwise.
  const std::optional<Json>& preprocessor_config() const { return preprocessor_config_; }
  const std::string& tokenizer_json_path() const { return tokenizer_json_path_; }
  const std::optional<ChatTemplateSource>& chat_template() const { return chat_template_; }
  // Special-token strings passed to chat templates: bos_token, eos_token, unk_token, pad_token.
  const std::map<std::string, std::string>& special_token_strings() const {
    return special_token_strings_;
  }

 private:
  static ModelFiles open_hf_directory(const std::string& path);
  static ModelFiles open_gguf(const std::string& path);
  void attach_mmproj(const std::string& mmproj_path);

  Format format_ = Format::kGguf;
  std::string path_;
  ModelConfig config_;
  std::vector<TensorView> tensors_;
  std::shared_ptr<GgufFile> gguf_;
  std::shared_ptr<GgufFile> mmproj_;
  std::optional<Json> preprocessor_config_;
  std::vector<std::shared_ptr<SafetensorsFile>> shards_;
  std::string tokenizer_json_path_;
  std::optional<ChatTemplateSource> chat_template_;
  std::map<std::string, std::string> special_token_strings_;
};

}  // namespace xlacel
