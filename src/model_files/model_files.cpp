#include "model_files/model_files.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/json_file.h"

namespace xlacel {

namespace fs = std::filesystem;

namespace {

std::string read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), "cannot open");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// tokenizer_config.json holds special tokens as plain strings or as AddedToken objects.
std::optional<std::string> special_token_text(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"].get<std::string>();
  }
  return std::nullopt;
}

// The template: chat_template.jinja beside the config (newer transformers), else the
// tokenizer_config.json field, which is a string or a list of {name, template}.
std::optional<ChatTemplateSource> find_hf_chat_template(const fs::path& dir,
                                                        const Json* tokenizer_config) {
  fs::path jinja = dir / "chat_template.jinja";
  if (fs::exists(jinja)) return ChatTemplateSource{read_text_file(jinja), jinja.string()};
  if (tokenizer_config == nullptr || !tokenizer_config->contains("chat_template")) {
    return std::nullopt;
  }
  std::string origin = (dir / "tokenizer_config.json").string() + ": chat_template";
  const Json& field = (*tokenizer_config)["chat_template"];
  if (field.is_string()) return ChatTemplateSource{field.get<std::string>(), origin};
  if (field.is_array()) {
    for (const Json& entry : field) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string()) {
        return ChatTemplateSource{entry["template"].get<std::string>(), origin + "[default]"};
      }
    }
    fail(origin, "no template named 'default'");
  }
  if (field.is_null()) return std::nullopt;
  fail(origin, "must be a string or a list of named templates");
}

std::vector<fs::path> safetensors_shards(const fs::path& dir) {
  fs::path single = dir / "model.safetensors";
  fs::path index_path = dir / "model.safetensors.index.json";
  if (fs::exists(index_path)) {
    Json index = read_json_file(index_path.string());
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      fail(index_path.string(), "missing object 'weight_map'");
    }
    std::set<std::string> files;
    for (const auto& [tensor, file] : index["weight_map"].items()) {
      if (!file.is_string()) fail(index_path.string(), "weight_map['{}'] is not a string", tensor);
      std::string name = file.get<std::string>();
      if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
        fail(index_path.string(), "weight_map['{}'] names '{}', not a file beside the index",
             tensor, name);
      }
      files.insert(name);
    }
    std::vector<fs::path> shards;
    for (const std::string& name : files) shards.push_back(dir / name);
    return shards;
  }
  if (fs::exists(single)) return {single};
  return {};
}

// A sentence-transformers directory's pooling: modules.json names the Pooling module's folder,
// whose config.json sets one pooling_mode_* true. Null where there is none.
std::optional<Pooling> sentence_transformers_pooling(const fs::path& dir) {
  const fs::path modules_path = dir / "modules.json";
  if (!fs::exists(modules_path)) return std::nullopt;
  const Json modules = read_json_file(modules_path.string());
  if (!modules.is_array()) fail(modules_path.string(), "must be a list of modules");
  for (const Json& module : modules) {
    if (!module.is_object() || !module.contains("type") || !module["type"].is_string() ||
        !module["type"].get<std::string>().ends_with(".Pooling")) {
      continue;
    }
    const std::string folder = module.contains("path") && module["path"].is_string()
                                   ? module["path"].get<std::string>()
                                   : "";
    if (folder.empty() || folder.find("..") != std::string::npos || folder.starts_with("/")) {
      fail(modules_path.string(), "the Pooling module's path '{}' is not a folder inside it",
           folder);
    }
    const fs::path config_path = dir / folder / "config.json";
    if (!fs::exists(config_path)) fail(config_path.string(), "missing (named by modules.json)");
    const Json config = read_json_file(config_path.string());
    auto mode = [&](const char* name) {
      return config.is_object() && config.contains(name) && config[name].is_boolean() &&
             config[name].get<bool>();
    };
    if (mode("pooling_mode_lasttoken")) return Pooling::kLast;
    if (mode("pooling_mode_cls_token")) return Pooling::kCls;
    if (mode("pooling_mode_mean_tokens")) return Pooling::kMean;
    fail(config_path.string(),
         "sets none of pooling_mode_mean_tokens, pooling_mode_cls_token, pooling_mode_lasttoken "
         "(the poolings xlacel runs)");
  }
  return std::nullopt;
}

// A vision-language model keeps its decoder under model.text_model. (Idefics3, SmolVLM),
// language_model.model. (Gemma 3 as published) or model.language_model. (as transformers 5 saves
// it); named as a text-only model's (model.layers.N..., lm_head.weight), the decoder's weights
// are found as every family's are. The vision tower keeps its own names.
std::string decoder_tensor_name(const std::string& name) {
  for (std::string_view prefix :
       {"model.text_model.", "model.language_model.", "language_model.model."}) {
    if (name.starts_with(prefix)) return "model." + name.substr(prefix.size());
  }
  if (name == "language_model.lm_head.weight") return "lm_head.weight";
  return name;
}

}  // namespace

ModelFiles ModelFiles::open(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) return open_hf_directory(path);
  if (!fs::exists(path, error)) fail(path, "no such file or directory");
  return open_gguf(path);
}

ModelFiles ModelFiles::open(const std::string& path, const std::string& mmproj_path) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    fail(path,
         "is an HF directory: an mmproj file goes with a GGUF text model (a directory holds "
         "its vision tower itself)");
  }
  ModelFiles model = open(path);
  if (!fs::exists(mmproj_path, error)) fail(mmproj_path, "no such file or directory");
  model.attach_mmproj(mmproj_path);
  return model;
}

void ModelFiles::attach_mmproj(const std::string& mmproj_path) {
  mmproj_ = std::make_shared<GgufFile>(mmproj_path);
  VisionConfig vision = read_vision_config_from_gguf(*mmproj_, *gguf_);
  if (vision.text_hidden_size != config_.hidden_size) {
    fail(mmproj_path, "projects to width {} (clip.vision.projection_dim), but {} is {} wide",
         vision.text_hidden_size, path_, config_.hidden_size);
  }
  preprocessor_config_ = preprocessor_config_from_gguf(*mmproj_, vision);
  config_.vision = std::move(vision);
  for (const GgufTensorInfo& info : mmproj_->tensor_infos()) {
    if (find_tensor(info.name)) {
      fail(mmproj_path, "tensor '{}' is also in {}: the two files' tensors would be ambiguous",
           info.name, path_);
    }
    tensors_.push_back(mmproj_->tensor(info));
    config_.stored_types[info.name] = tensors_.back().dtype;
  }
}

ModelFiles ModelFiles::open_gguf(const std::string& path) {
  ModelFiles model;
  model.format_ = Format::kGguf;
  model.path_ = path;
  model.gguf_ = std::make_shared<GgufFile>(path);
  model.config_ = config_from_gguf(*model.gguf_);
  for (const GgufTensorInfo& info : model.gguf_->tensor_infos()) {
    model.tensors_.push_back(model.gguf_->tensor(info));
    model.config_.stored_types[info.name] = model.tensors_.back().dtype;
  }
  if (model.gguf_->has("tokenizer.chat_template")) {
    model.chat_template_ = ChatTemplateSource{model.gguf_->get_string("tokenizer.chat_template"),
                                              path + ": tokenizer.chat_template"};
  }
  if (model.gguf_->has("tokenizer.ggml.tokens")) {
    auto tokens = model.gguf_->get_string_array("tokenizer.ggml.tokens");
    auto name_token = [&](const char* name, const char* key) {
      if (!model.gguf_->has(key)) return;
      int64_t id = model.gguf_->get_int(key);
      if (id < 0 || id >= static_cast<int64_t>(tokens.size())) {
        fail(path, "{} {} is outside the vocabulary", key, id);
      }
      model.special_token_strings_[name] = tokens[static_cast<std::size_t>(id)];
    };
    name_token("bos_token", "tokenizer.ggml.bos_token_id");
    name_token("eos_token", "tokenizer.ggml.eos_token_id");
    name_token("unk_token", "tokenizer.ggml.unknown_token_id");
    name_token("pad_token", "tokenizer.ggml.padding_token_id");
  }
  return model;
}

ModelFiles ModelFiles::open_hf_directory(const std::string& path) {
  ModelFiles model;
  model.format_ = Format::kHuggingFaceDirectory;
  model.path_ = path;
  fs::path dir(path);

  fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path)) fail(config_path.string(), "missing (not an HF model directory?)");
  Json config = read_json_file(config_path.string());
  std::optional<Json> generation_config;
  fs::path generation_path = dir / "generation_config.json";
  if (fs::exists(generation_path)) generation_config = read_json_file(generation_path.string());
  model.config_ = config_from_hf(config, generation_config ? &*generation_config : nullptr,
                                 config_path.string());
  if (std::optional<Pooling> pooling = sentence_transformers_pooling(dir)) {
    model.config_.pooling = *pooling;
  }
  // A quantized checkpoint's tensors are read where they are gpt-oss's published MXFP4 experts
  // (packed blocks beside their exponents: models/weight_loader.cpp), not otherwise; the model's
  // GGUF keeps the GGML formats as stored and is.
  if (config.is_object() && config.contains("quantization_config")) {
    const Json& quantization = config["quantization_config"];
    const std::string method = quantization.is_object() && quantization.contains("quant_method") &&
                                       quantization["quant_method"].is_string()
                                   ? quantization["quant_method"].get<std::string>()
                                   : "?";
    if (method != "mxfp4") {
      fail(config_path.string(),
           "quantization_config (quant_method '{}'): of quantized HF checkpoints only MXFP4 ones "
           "(gpt-oss's) are read; use the model's GGUF (llama.cpp's convert_hf_to_gguf.py keeps "
           "the GGML formats as stored, and xlacel runs them so) or a dequantized directory",
           method);
    }
  }

  std::set<std::string> seen;
  for (const fs::path& shard_path : safetensors_shards(dir)) {
    auto shard = std::make_shared<SafetensorsFile>(shard_path.string());
    for (TensorView tensor : shard->tensors()) {
      tensor.name = decoder_tensor_name(tensor.name);
      if (!seen.insert(tensor.name).second) {
        fail(shard_path.string(), "tensor '{}' also appears in another shard", tensor.name);
      }
      model.tensors_.push_back(tensor);
      model.config_.stored_types[tensor.name] = tensor.dtype;
    }
    model.shards_.push_back(std::move(shard));
  }

  fs::path tokenizer_json = dir / "tokenizer.json";
  if (fs::exists(tokenizer_json)) model.tokenizer_json_path_ = tokenizer_json.string();
  std::optional<Json> tokenizer_config;
  fs::path tokenizer_config_path = dir / "tokenizer_config.json";
  if (fs::exists(tokenizer_config_path)) {
    tokenizer_config = read_json_file(tokenizer_config_path.string());
    if (!tokenizer_config->is_object()) {
      fail(tokenizer_config_path.string(), "not a JSON object");
    }
    for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
      if (!tokenizer_config->contains(name)) continue;
      if (auto text = special_token_text((*tokenizer_config)[name])) {
        model.special_token_strings_[name] = *text;
      }
    }
  }
  model.chat_template_ =
      find_hf_chat_template(dir, tokenizer_config ? &*tokenizer_config : nullptr);
  const fs::path preprocessor_path = dir / "preprocessor_config.json";
  if (fs::exists(preprocessor_path)) {
    model.preprocessor_config_ = read_json_file(preprocessor_path.string());
  }
  return model;
}

void ModelFiles::release(const TensorView& tensor) const {
  if (gguf_) gguf_->release(tensor);
  if (mmproj_) mmproj_->release(tensor);
  for (const auto& shard : shards_) shard->release(tensor);
}

std::shared_ptr<const void> ModelFiles::holder(const TensorView& tensor) const {
  if (gguf_ && gguf_->holds(tensor)) return gguf_;
  if (mmproj_ && mmproj_->holds(tensor)) return mmproj_;
  for (const auto& shard : shards_) {
    if (shard->holds(tensor)) return shard;
  }
  return nullptr;
}

std::optional<TensorView> ModelFiles::find_tensor(const std::string& name) const {
  for (const TensorView& tensor : tensors_) {
    if (tensor.name == name) return tensor;
  }
  return std::nullopt;
}

std::string ModelFiles::name() const {
  fs::path normal = fs::path(path_).lexically_normal();
  if (!normal.has_filename()) normal = normal.parent_path();
  return format_ == Format::kHuggingFaceDirectory ? normal.filename().string()
                                                  : normal.stem().string();
}

}  // namespace xlacel
