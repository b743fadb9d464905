#include "engine/slot_file.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <string_view>
#include <system_error>

#include "common/error.h"

namespace xlacel::engine {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kMagic = "XLSLOT02";

template <typename T>
void put(std::ofstream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

// Reads from a file's bytes, failing (naming the file) at its end.
class Reader {
 public:
  Reader(std::string path, std::vector<char> bytes)
      : path_(std::move(path)), bytes_(std::move(bytes)) {}

  std::span<const char> take(uint64_t count) {
    if (count > bytes_.size() - at_) fail(path_, "is truncated: not a slot file of this version");
    std::span<const char> part(bytes_.data() + at_, static_cast<std::size_t>(count));
    at_ += static_cast<std::size_t>(count);
    return part;
  }
  template <typename T>
  T get() {
    T value;
    std::memcpy(&value, take(sizeof value).data(), sizeof value);
    return value;
  }
  bool done() const { return at_ == bytes_.size(); }
  std::size_t left() const { return bytes_.size() - at_; }

 private:
  std::string path_;
  std::vector<char> bytes_;
  std::size_t at_ = 0;
};

}  // namespace

uint64_t write_slot_file(const fs::path& path, const SlotFile& slot) {
  const fs::path temporary = path.string() + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) fail(path.string(), "cannot be written");
    out.write(kMagic.data(), static_cast<std::streamsize>(kMagic.size()));
    put(out, static_cast<uint32_t>(slot.model.size()));
    out.write(slot.model.data(), static_cast<std::streamsize>(slot.model.size()));
    put(out, static_cast<uint64_t>(slot.tokens.size()));
    out.write(reinterpret_cast<const char*>(slot.tokens.data()),
              static_cast<std::streamsize>(slot.tokens.size() * sizeof(int32_t)));
    put(out, slot.rows.positions);
    put(out, static_cast<uint32_t>(slot.rows.caches.size()));
    for (const std::vector<std::byte>& rows : slot.rows.caches) {
      put(out, static_cast<uint64_t>(rows.size()));
      out.write(reinterpret_cast<const char*>(rows.data()),
                static_cast<std::streamsize>(rows.size()));
    }
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      fail(path.string(), "could not be written whole (disk full?)");
    }
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) fail(path.string(), "cannot be written: {}", error.message());
  return fs::file_size(path);
}

SlotFile read_slot_file(const fs::path& path, uint64_t& bytes) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) fail(path.string(), "no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), "cannot be read");
  std::vector<char> content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes = content.size();
  Reader reader(path.string(), std::move(content));
  const std::span<const char> magic = reader.take(kMagic.size());
  if (std::string_view(magic.data(), magic.size()) != kMagic) {
    fail(path.string(), "is not an xlacel slot file");
  }
  SlotFile slot;
  const std::span<const char> model = reader.take(reader.get<uint32_t>());
  slot.model.assign(model.begin(), model.end());
  const auto tokens = reader.get<uint64_t>();
  if (tokens > reader.left() / sizeof(int32_t))
    fail(path.string(), "is truncated: not a slot file");
  const std::span<const char> token_bytes = reader.take(tokens * sizeof(int32_t));
  slot.tokens.resize(static_cast<std::size_t>(tokens));
  if (tokens > 0) std::memcpy(slot.tokens.data(), token_bytes.data(), token_bytes.size());
  slot.rows.positions = reader.get<int64_t>();
  const auto caches = reader.get<uint32_t>();
  for (uint32_t i = 0; i < caches; ++i) {
    const std::span<const char> rows = reader.take(reader.get<uint64_t>());
    const auto* first = reinterpret_cast<const std::byte*>(rows.data());
    slot.rows.caches.emplace_back(first, first + rows.size());
  }
  if (!reader.done()) fail(path.string(), "has bytes past its last cache: not a slot file");
  return slot;
}

}  // namespace xlacel::engine
