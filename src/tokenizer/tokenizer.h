#pragma once
// Text <-> token ids with the exact semantics of HF `tokenizers` for BPE models (byte-level, and
// SentencePiece-style with byte fallback), built from a tokenizer.json or, as transformers does,
// from a GGUF's tokenizer metadata (`tokenizer.ggml.model` gpt2 or llama).
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace xlacel {

class GgufFile;

namespace tokenizer {
struct TokenizerParts;
}

class Tokenizer {
 public:
  // HF tokenizer.json, as AutoTokenizer loads its directory: tokenizer_config.json beside it
  // (named special tokens) and the tokenizer class chosen from it and config.json's model_type,
  // which may replace tokenizer.json's normalizer, pre-tokenizer and decoder
  // (tokenizer/auto_tokenizer_class.h). Throws Error naming the file for malformed input and for
  // anything this implementation does not support.
  static std::unique_ptr<Tokenizer> from_tokenizer_json(const std::string& path);
  // What transformers builds from a GGUF (AutoTokenizer.from_pretrained(dir, gguf_file=...)).
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& gguf);

  explicit Tokenizer(std::unique_ptr<tokenizer::TokenizerParts> parts);  // use the factories
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Added/special token strings in `text` are matched as those tokens, like HF. `text` must be
  // valid UTF-8 (Error otherwise). add_special_tokens applies the post-processor (e.g. BOS).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // Ids the vocabulary lacks are skipped (as HF does); invalid UTF-8 becomes U+FFFD.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  std::size_t vocab_size() const;  // largest id + 1, added tokens included
  std::optional<int32_t> token_id(std::string_view token) const;
  std::string_view token_text(int32_t id) const;  // the vocabulary string ("" if none)
  bool is_special(int32_t id) const;
  std::optional<int32_t> bos_token_id() const;
  std::optional<int32_t> eos_token_id() const;
  std::string describe() const;  // one line for `xlacel inspect`

  // Whether a text is the concatenation of its tokens' bytes (byte-level BPE, SentencePiece with
  // byte fallback), as grammar engines need; false for a decoder that joins tokens with spaces.
  bool tokens_are_byte_pieces() const;
  // The bytes token `id` adds in the middle of a text (a <0xNN> token: that byte); "" for an id
  // the vocabulary lacks.
  std::string token_bytes(int32_t id) const;

  // What the decoder carries from one token to the next within one decode (a StreamDecoder
  // keeps it across feeds).
  struct DecodeState {
    bool first = true;          // no token appended yet (decoders joining with spaces need it)
    bool at_text_start = true;  // no text produced yet (a Strip decoder looks at the first)
    std::string byte_run;       // ByteFallback: <0xNN> bytes whose run has not ended yet
  };
  // Appends the bytes token `id` lets the decoder produce now (UTF-8 repair comes after); false
  // (nothing appended or held) for an unknown id or a skipped special token.
  bool append_token_bytes(int32_t id, bool skip_special_tokens, DecodeState& state,
                          std::string& bytes) const;
  // Appends what `state` still holds once the ids have ended (a pending byte run).
  void finish_decode(DecodeState& state, std::string& bytes) const;

 private:
  std::unique_ptr<tokenizer::TokenizerParts> parts_;
};

// Incremental decoding for streaming output: feed ids one at a time; each call returns only
// text that ends on a complete UTF-8 character (bytes of an unfinished character wait for the
// next ids; with a ByteFallback decoder a run of <0xNN> tokens waits for the token after it,
// since one bad byte turns the whole run into U+FFFD). The concatenation of every feed() and
// flush() equals decode() of all ids.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  std::string feed(int32_t id);
  std::string flush();  // whatever is pending (an unfinished character becomes U+FFFD)
  void reset();

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  Tokenizer::DecodeState state_;
  std::string pending_;
};

// UTF-8 repair as Rust's String::from_utf8_lossy / Python's errors="replace": each maximal
// invalid subpart becomes U+FFFD. Without `final`, a trailing sequence that is valid so far but
// unfinished is left unconsumed. Returns the number of bytes consumed.
std::size_t decode_utf8_lossy(std::string_view bytes, bool final, std::string& out);

}  // namespace xlacel
