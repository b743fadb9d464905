#include "backends/pjrt/pjrt_client.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "common/error.h"

namespace xlacel::pjrt {

PJRT_Buffer_Type buffer_type(stablehlo::ElementType element) {
  switch (element) {
    case stablehlo::ElementType::kF32:
      return PJRT_Buffer_Type_F32;
    case stablehlo::ElementType::kF16:
      return PJRT_Buffer_Type_F16;
    case stablehlo::ElementType::kBF16:
      return PJRT_Buffer_Type_BF16;
    case stablehlo::ElementType::kI1:
      return PJRT_Buffer_Type_PRED;
    case stablehlo::ElementType::kI8:
      return PJRT_Buffer_Type_S8;
    case stablehlo::ElementType::kI32:
      return PJRT_Buffer_Type_S32;
    case stablehlo::ElementType::kI64:
      return PJRT_Buffer_Type_S64;
    case stablehlo::ElementType::kUI8:
      return PJRT_Buffer_Type_U8;
    case stablehlo::ElementType::kUI32:
      return PJRT_Buffer_Type_U32;
  }
  return PJRT_Buffer_Type_F32;  // unreachable: the switch covers every element type
}

// --- Buffer

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    plugin_ = std::exchange(other.plugin_, nullptr);
    buffer_ = std::exchange(other.buffer_, nullptr);
  }
  return *this;
}

void Buffer::reset() {
  if (buffer_ == nullptr) return;
  auto args = make_args<PJRT_Buffer_Destroy_Args>();
  args.buffer = std::exchange(buffer_, nullptr);
  PJRT_Error* error = plugin_->api().PJRT_Buffer_Destroy(&args);
  if (error != nullptr) plugin_->message_of(error);  // from a destructor: nothing to report to
}

void Buffer::to_host(void* destination, std::size_t size) const {
  auto args = make_args<PJRT_Buffer_ToHostBuffer_Args>();
  args.src = buffer_;
  args.dst = destination;
  args.dst_size = size;
  plugin_->check(plugin_->api().PJRT_Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  // The event also carries any error of the computation that produced the buffer.
  plugin_->await(args.event, "PJRT_Buffer_ToHostBuffer");
}

std::size_t Buffer::host_size() const {
  // With no destination, PJRT_Buffer_ToHostBuffer only reports the size.
  auto args = make_args<PJRT_Buffer_ToHostBuffer_Args>();
  args.src = buffer_;
  plugin_->check(plugin_->api().PJRT_Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  return args.dst_size;
}

// --- LoadedExecutable

LoadedExecutable::LoadedExecutable(const Plugin* plugin, PJRT_LoadedExecutable* executable)
    : plugin_(plugin), executable_(executable) {
  try {
    num_outputs_ = count_outputs();
  } catch (...) {
    reset();
    throw;
  }
}

template <typename Use>
auto LoadedExecutable::with_executable(Use use) const {
  const PJRT_Api& api = plugin_->api();
  auto get = make_args<PJRT_LoadedExecutable_GetExecutable_Args>();
  get.loaded_executable = executable_;
  plugin_->check(api.PJRT_LoadedExecutable_GetExecutable(&get),
                 "PJRT_LoadedExecutable_GetExecutable");
  struct Destroy {
    const Plugin* plugin;
    PJRT_Executable* executable;
    ~Destroy() {
      auto destroy = make_args<PJRT_Executable_Destroy_Args>();
      destroy.executable = executable;
      PJRT_Error* error = plugin->api().PJRT_Executable_Destroy(&destroy);
      if (error != nullptr) plugin->message_of(error);
    }
  } destroy{plugin_, get.executable};
  return use(get.executable);
}

std::size_t LoadedExecutable::count_outputs() const {
  return with_executable([&](PJRT_Executable* executable) {
    auto outputs = make_args<PJRT_Executable_NumOutputs_Args>();
    outputs.executable = executable;
    plugin_->check(plugin_->api().PJRT_Executable_NumOutputs(&outputs),
                   "PJRT_Executable_NumOutputs");
    return outputs.num_outputs;
  });
}

std::vector<PJRT_Device*> LoadedExecutable::addressable_devices() const {
  auto args = make_args<PJRT_LoadedExecutable_AddressableDevices_Args>();
  args.executable = executable_;
  plugin_->check(plugin_->api().PJRT_LoadedExecutable_AddressableDevices(&args),
                 "PJRT_LoadedExecutable_AddressableDevices");
  return {args.addressable_devices, args.addressable_devices + args.num_addressable_devices};
}

LoadedExecutable::Program LoadedExecutable::optimized_program() const {
  return with_executable([&](PJRT_Executable* executable) {
    auto program = make_args<PJRT_Program>();
    constexpr std::string_view kFormat = "hlo";
    program.format = kFormat.data();
    program.format_size = kFormat.size();
    auto args = make_args<PJRT_Executable_OptimizedProgram_Args>();
    args.executable = executable;
    args.program = &program;
    // First the size, then the bytes.
    plugin_->check(plugin_->api().PJRT_Executable_OptimizedProgram(&args),
                   "PJRT_Executable_OptimizedProgram");
    std::string code(program.code_size, '\0');
    program.code = code.data();
    plugin_->check(plugin_->api().PJRT_Executable_OptimizedProgram(&args),
                   "PJRT_Executable_OptimizedProgram");
    code.resize(program.code_size);
    return Program{std::string(program.format, program.format_size), std::move(code)};
  });
}

LoadedExecutable& LoadedExecutable::operator=(LoadedExecutable&& other) noexcept {
  if (this != &other) {
    reset();
    plugin_ = std::exchange(other.plugin_, nullptr);
    executable_ = std::exchange(other.executable_, nullptr);
    num_outputs_ = std::exchange(other.num_outputs_, 0);
  }
  return *this;
}

void LoadedExecutable::reset() {
  if (executable_ == nullptr) return;
  auto args = make_args<PJRT_LoadedExecutable_Destroy_Args>();
  args.executable = std::exchange(executable_, nullptr);
  PJRT_Error* error = plugin_->api().PJRT_LoadedExecutable_Destroy(&args);
  if (error != nullptr) plugin_->message_of(error);
}

std::optional<std::string> LoadedExecutable::serialize() const {
  if (!plugin_->can_serialize()) return std::nullopt;
  return with_executable([&](PJRT_Executable* executable) -> std::optional<std::string> {
    auto args = make_args<PJRT_Executable_Serialize_Args>();
    args.executable = executable;
    PJRT_Error* error = plugin_->api().PJRT_Executable_Serialize(&args);
    if (error != nullptr && plugin_->code_of(error) == PJRT_Error_Code_UNIMPLEMENTED) {
      plugin_->message_of(error);
      return std::nullopt;
    }
    plugin_->check(error, "PJRT_Executable_Serialize");
    std::string bytes(args.serialized_bytes, args.serialized_bytes_size);
    if (args.serialized_executable_deleter != nullptr) {
      args.serialized_executable_deleter(args.serialized_executable);
    }
    return bytes;
  });
}

std::vector<Buffer> LoadedExecutable::execute(std::span<PJRT_Buffer* const> arguments) const {
  const std::span<PJRT_Buffer* const> lists[1] = {arguments};
  return std::move(execute(lists).front());
}

std::vector<std::vector<Buffer>> LoadedExecutable::execute(
    std::span<const std::span<PJRT_Buffer* const>> argument_lists) const {
  const std::size_t devices = argument_lists.size();
  std::vector<PJRT_Buffer* const*> arguments;
  for (const auto& list : argument_lists) {
    if (list.size() != argument_lists.front().size()) {
      throw Error("xla: PJRT_LoadedExecutable_Execute: devices with different argument counts");
    }
    arguments.push_back(list.data());
  }
  std::vector<std::vector<PJRT_Buffer*>> outputs(devices,
                                                 std::vector<PJRT_Buffer*>(num_outputs_, nullptr));
  std::vector<PJRT_Buffer**> output_lists;
  for (auto& list : outputs) output_lists.push_back(list.data());
  auto options = make_args<PJRT_ExecuteOptions>();
  auto args = make_args<PJRT_LoadedExecutable_Execute_Args>();
  args.executable = executable_;
  args.options = &options;
  args.argument_lists = arguments.data();
  args.num_devices = devices;
  args.num_args = devices == 0 ? 0 : argument_lists.front().size();
  args.output_lists = output_lists.data();
  plugin_->check(plugin_->api().PJRT_LoadedExecutable_Execute(&args),
                 "PJRT_LoadedExecutable_Execute");
  std::vector<std::vector<Buffer>> results(devices);
  for (std::size_t d = 0; d < devices; ++d) {
    results[d].reserve(num_outputs_);
    for (PJRT_Buffer* buffer : outputs[d]) results[d].emplace_back(plugin_, buffer);
  }
  return results;
}

// --- Client

Client::Client(std::shared_ptr<const Plugin> plugin, std::span<const IntegerOption> options,
               std::size_t devices)
    : plugin_(std::move(plugin)) {
  const PJRT_Api& api = plugin_->api();
  std::vector<PJRT_NamedValue> values;
  for (const IntegerOption& option : options) {
    auto value = make_args<PJRT_NamedValue>();
    value.name = option.name.data();
    value.name_size = option.name.size();
    value.type = PJRT_NamedValue_kInt64;
    value.int64_value = option.value;
    value.value_size = 1;
    values.push_back(value);
  }
  auto create = make_args<PJRT_Client_Create_Args>();
  create.create_options = values.data();
  create.num_options = values.size();
  plugin_->check(api.PJRT_Client_Create(&create), "PJRT_Client_Create");
  client_ = create.client;
  try {
    auto name = make_args<PJRT_Client_PlatformName_Args>();
    name.client = client_;
    plugin_->check(api.PJRT_Client_PlatformName(&name), "PJRT_Client_PlatformName");
    platform_name_.assign(name.platform_name, name.platform_name_size);

    auto version = make_args<PJRT_Client_PlatformVersion_Args>();
    version.client = client_;
    plugin_->check(api.PJRT_Client_PlatformVersion(&version), "PJRT_Client_PlatformVersion");
    platform_version_.assign(version.platform_version, version.platform_version_size);

    const std::size_t wanted = devices;
    auto addressable = make_args<PJRT_Client_AddressableDevices_Args>();
    addressable.client = client_;
    plugin_->check(api.PJRT_Client_AddressableDevices(&addressable),
                   "PJRT_Client_AddressableDevices");
    if (addressable.num_addressable_devices == 0) {
      throw Error("xla: PJRT_Client_AddressableDevices: the client has no devices");
    }
    if (addressable.num_addressable_devices < wanted) {
      throw Error(fmt::format("xla: the client has {} device{}, {} wanted",
                              addressable.num_addressable_devices,
                              addressable.num_addressable_devices == 1 ? "" : "s", wanted));
    }
    devices_.assign(addressable.addressable_devices, addressable.addressable_devices + wanted);

    if (api.struct_size >= offsetof(PJRT_Api, PJRT_Device_GetDescription) + sizeof(void*) &&
        api.PJRT_Device_GetDescription != nullptr && api.PJRT_DeviceDescription_Kind != nullptr) {
      auto description = make_args<PJRT_Device_GetDescription_Args>();
      description.device = devices_.front();
      plugin_->check(api.PJRT_Device_GetDescription(&description), "PJRT_Device_GetDescription");
      auto kind = make_args<PJRT_DeviceDescription_Kind_Args>();
      kind.device_description = description.device_description;
      plugin_->check(api.PJRT_DeviceDescription_Kind(&kind), "PJRT_DeviceDescription_Kind");
      device_kind_.assign(kind.device_kind, kind.device_kind_size);
    }
  } catch (...) {
    auto destroy = make_args<PJRT_Client_Destroy_Args>();
    destroy.client = client_;
    PJRT_Error* error = api.PJRT_Client_Destroy(&destroy);
    if (error != nullptr) plugin_->message_of(error);
    throw;
  }
}

Client::~Client() {
  auto destroy = make_args<PJRT_Client_Destroy_Args>();
  destroy.client = client_;
  PJRT_Error* error = plugin_->api().PJRT_Client_Destroy(&destroy);
  if (error != nullptr) plugin_->message_of(error);
}

Buffer Client::upload(const void* data, PJRT_Buffer_Type type, std::span<const int64_t> dims,
                      std::size_t device) const {
  if (device >= devices_.size()) {
    throw Error(fmt::format("xla: upload to device {} of {}", device, devices_.size()));
  }
  auto args = make_args<PJRT_Client_BufferFromHostBuffer_Args>();
  args.client = client_;
  args.data = data;
  args.type = type;
  args.dims = dims.data();
  args.num_dims = dims.size();
  // The plugin may read `data` until done_with_host_buffer; we wait for it before returning,
  // which lets it copy asynchronously (or not at all beyond the transfer) in the meantime.
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes;
  args.device = devices_[device];
  plugin_->check(plugin_->api().PJRT_Client_BufferFromHostBuffer(&args),
                 "PJRT_Client_BufferFromHostBuffer");
  Buffer buffer(plugin_.get(), args.buffer);
  plugin_->await(args.done_with_host_buffer, "PJRT_Client_BufferFromHostBuffer");
  return buffer;
}

LoadedExecutable Client::compile(std::string_view mlir, const std::string& compile_options) const {
  auto program = make_args<PJRT_Program>();
  // The plugin only reads the code (the field is non-const for other uses of PJRT_Program).
  program.code = const_cast<char*>(mlir.data());
  program.code_size = mlir.size();
  constexpr std::string_view kFormat = "mlir";
  program.format = kFormat.data();
  program.format_size = kFormat.size();
  auto args = make_args<PJRT_Client_Compile_Args>();
  args.client = client_;
  args.program = &program;
  args.compile_options = compile_options.data();
  args.compile_options_size = compile_options.size();
  plugin_->check(plugin_->api().PJRT_Client_Compile(&args), "PJRT_Client_Compile");
  return LoadedExecutable(plugin_.get(), args.executable);
}

LoadedExecutable Client::deserialize(std::string_view serialized) const {
  if (!plugin_->can_serialize()) {
    throw Error("xla: PJRT_Executable_DeserializeAndLoad: not provided by the plugin");
  }
  auto args = make_args<PJRT_Executable_DeserializeAndLoad_Args>();
  args.client = client_;
  args.serialized_executable = serialized.data();
  args.serialized_executable_size = serialized.size();
  plugin_->check(plugin_->api().PJRT_Executable_DeserializeAndLoad(&args),
                 "PJRT_Executable_DeserializeAndLoad");
  return LoadedExecutable(plugin_.get(), args.loaded_executable);
}

}  // namespace xlacel::pjrt
