#include "compile_cache/cache_entry.h"

#include <fstream>
#include <system_error>

#include "common/error.h"
#include "common/json_file.h"
#include "compile_cache/atomic_file.h"
#include "compile_cache/hash.h"

namespace xlacel::compile_cache {

namespace fs = std::filesystem;

EntryPaths entry_paths(const fs::path& dir, const std::string& key, const std::string& extension) {
  return {dir / (key + extension), dir / (key + ".json")};
}

std::optional<EntryRecord> verify_entry(const EntryPaths& paths, const std::string& key,
                                        std::string& problem) {
  problem.clear();
  std::error_code error;
  bool have_sidecar = fs::exists(paths.sidecar, error);
  bool have_artifact = fs::exists(paths.artifact, error);
  if (!have_sidecar) {
    // An artifact without a sidecar: a writer crashed (or is) between the two renames.
    if (have_artifact) problem = "artifact without sidecar";
    return std::nullopt;
  }
  std::string text;
  {
    std::ifstream in(paths.sidecar, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  EntryRecord record;
  try {
    Json json = parse_json_text(text, paths.sidecar.string());
    if (json.value("format", 0) != kEntryFormat) {
      problem = "sidecar has an unknown format";
      return std::nullopt;
    }
    record.key = json.at("key").get<std::string>();
    record.size = json.at("size").get<uint64_t>();
    record.checksum = json.at("xxh3_128").get<std::string>();
    record.compiler = json.value("compiler", "");
    record.target = json.value("target", "");
    record.flags = json.value("flags", std::vector<std::string>{});
    record.source = json.value("source", "");
    record.compile_seconds = json.value("compile_seconds", 0.0);
  } catch (const std::exception&) {  // Error or a mistyped field
    problem = "unreadable sidecar";
    return std::nullopt;
  }
  if (record.key != key) {
    problem = "sidecar names another key";
    return std::nullopt;
  }
  if (!have_artifact) {
    problem = "artifact missing";
    return std::nullopt;
  }
  uint64_t size = fs::file_size(paths.artifact, error);
  if (error) {
    problem = "artifact unreadable";
    return std::nullopt;
  }
  if (size != record.size) {
    problem = fmt::format("artifact is {} bytes, sidecar says {}", size, record.size);
    return std::nullopt;
  }
  try {
    if (hash_file(paths.artifact).hex() != record.checksum) {
      problem = "artifact checksum mismatch";
      return std::nullopt;
    }
  } catch (const Error&) {
    problem = "artifact unreadable";
    return std::nullopt;
  }
  return record;
}

void write_sidecar(const EntryPaths& paths, const EntryRecord& record) {
  Json json = {{"format", kEntryFormat},
               {"key", record.key},
               {"size", record.size},
               {"xxh3_128", record.checksum},
               {"compiler", record.compiler},
               {"target", record.target},
               {"flags", record.flags},
               {"source", record.source},
               {"compile_seconds", record.compile_seconds}};
  TempFile temp(paths.sidecar.parent_path(), record.key, ".json");
  temp.write(json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
  temp.commit(paths.sidecar);
}

}  // namespace xlacel::compile_cache
