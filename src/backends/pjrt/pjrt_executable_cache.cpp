#include "backends/pjrt/pjrt_executable_cache.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <optional>
#include <system_error>

#include "common/error.h"
#include "compile_cache/host_cpu.h"

namespace xlacel::pjrt {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Thrown by PjrtCompiler::compile when the plugin compiled but cannot serialize.
class SerializationUnsupported : public Error {
 public:
  SerializationUnsupported() : Error("xla: the plugin cannot serialize executables") {}
};

std::string hex(std::string_view bytes) {
  std::string text;
  for (unsigned char byte : bytes) text += fmt::format("{:02x}", byte);
  return text;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), "cannot read the cached executable");
  return {std::istreambuf_iterator<char>(in), {}};
}

// The plugin file as the cache sees it: a reinstall at the same path changes size or mtime.
std::string file_identity(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return path.string();
  return fmt::format("{} ({} bytes, mtime {})", path.string(), info.st_size, info.st_mtime);
}

}  // namespace

PjrtCompiler::PjrtCompiler(const Client& client, std::string compile_options)
    : client_(client), compile_options_(std::move(compile_options)) {
  const Plugin& plugin = client.plugin();
  identity_ = fmt::format("plugin {}\nPJRT API {}.{}\nplatform {} {}\n{}",
                          file_identity(plugin.path()), plugin.major(), plugin.minor(),
                          client.platform_name(), client.platform_version(), plugin.attributes());
}

void PjrtCompiler::compile(const compile_cache::CompileJob& job) {
  try {
    compiled_ = client_.compile(job.mlir, compile_options_);
  } catch (const Error& e) {
    fail(job.source, "{}", e.what());
  }
  std::optional<std::string> bytes = compiled_.serialize();
  if (!bytes) throw SerializationUnsupported();
  std::ofstream out(job.output, std::ios::binary | std::ios::trunc);
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) fail(job.output.string(), "cannot write the serialized executable");
}

compile_cache::CompileTarget pjrt_target(const Client& client, device::DeviceKind device,
                                         const std::string& compile_options) {
  compile_cache::CompileTarget target;
  target.name = fmt::format("xla {}", client.platform_name());
  // XLA CPU generates code for the host's CPU features; a GPU executable for its device.
  target.identity =
      device == device::DeviceKind::kCpu
          ? "cpu host\n" + compile_cache::host_cpu().identity
          : fmt::format("{} device {}", device::device_kind_name(device), client.device_kind());
  target.flags = {"compile_options=" + hex(compile_options)};
  // XLA parses $XLA_FLAGS into the DebugOptions every compile starts from, so flags there
  // change the executable as much as the compile options do.
  if (const char* flags = std::getenv("XLA_FLAGS"); flags != nullptr && *flags != '\0') {
    target.flags.push_back(std::string("XLA_FLAGS=") + flags);
  }
  return target;
}

ExecutableLoad load_executable(const Client& client, compile_cache::CompileCache& cache,
                               const compile_cache::CompileRequest& request,
                               const std::string& compile_options) {
  const auto start = Clock::now();
  ExecutableLoad load;
  auto compile_now = [&] {
    const auto compile_start = Clock::now();
    try {
      load.executable = client.compile(request.mlir, compile_options);
    } catch (const Error& e) {
      fail(request.source, "{}", e.what());
    }
    load.compile_seconds = seconds_since(compile_start);
    load.cached = false;
  };
  if (!client.plugin().can_serialize()) {
    compile_now();
    load.seconds = seconds_since(start);
    return load;
  }
  PjrtCompiler compiler(client, compile_options);
  compile_cache::CompileResult result;
  try {
    result = cache.get_or_compile(compiler, request);
  } catch (const SerializationUnsupported&) {
    load.notes.push_back(fmt::format("xla: {}: the plugin cannot serialize executables; not cached",
                                     request.source));
    load.executable = compiler.take_compiled();
    load.compile_seconds = seconds_since(start);
    load.seconds = load.compile_seconds;
    return load;
  }
  load.compile_seconds = result.compile_seconds;
  if (!result.hit) {
    load.executable = compiler.take_compiled();
  } else {
    try {
      load.executable = client.deserialize(read_file(result.artifact));
      load.cached = true;
    } catch (const Error& e) {
      // An entry the plugin will not load (e.g. written by another build with the same
      // identity): compile instead, and say so.
      load.notes.push_back(fmt::format("xla: {}: cached executable {} not loadable ({}); compiling",
                                       request.source, result.artifact.string(), e.what()));
      compile_now();
    }
  }
  load.seconds = seconds_since(start);
  return load;
}

std::vector<ExecutableLoad> load_executables(
    const Client& client, compile_cache::CompileCache& cache,
    std::span<const compile_cache::CompileRequest> requests,
    std::span<const std::string> compile_options) {
  if (compile_options.size() != requests.size()) {
    throw Error(fmt::format("xla: {} compile options for {} executables", compile_options.size(),
                            requests.size()));
  }
  auto load_one = [&](std::size_t i) {
    return load_executable(client, cache, requests[i], compile_options[i]);
  };
  std::vector<std::future<ExecutableLoad>> pending;
  for (std::size_t i = 1; i < requests.size(); ++i) {
    pending.push_back(std::async(std::launch::async, load_one, i));
  }
  std::vector<ExecutableLoad> loads;
  std::optional<Error> first_error;
  if (!requests.empty()) {
    try {
      loads.push_back(load_one(0));
    } catch (const Error& e) {
      first_error = e;
    }
  }
  for (auto& future : pending) {
    try {
      loads.push_back(future.get());
    } catch (const Error& e) {
      if (!first_error) first_error = e;
    }
  }
  if (first_error) throw *first_error;
  return loads;
}

bool will_compile(const Client& client, compile_cache::CompileCache& cache,
                  const compile_cache::CompileRequest& request,
                  const std::string& compile_options) {
  if (!client.plugin().can_serialize()) return true;
  PjrtCompiler probe(client, compile_options);
  return !cache.lookup(probe, request).has_value();
}

}  // namespace xlacel::pjrt
