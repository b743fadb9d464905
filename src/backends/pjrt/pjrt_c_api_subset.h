#pragma once
// Our own declarations of the part of the PJRT C API (OpenXLA, xla/pjrt/c/pjrt_c_api.h) that
// this backend calls, written from the documented ABI so that the build needs no header from an
// installed wheel. The ABI rules this relies on:
//  - GetPjrtApi() returns a PJRT_Api: struct_size, extension_start, the API version {major,
//    minor}, then one function pointer per entry point in a fixed order that only ever grows at
//    the end (the order was last rearranged in 0.57). We declare the table up to the last entry
//    we call and check that the plugin's table is at least that long.
//  - Every argument struct begins with struct_size and extension_start. A plugin rejects a
//    struct smaller than the one it was built with and ignores fields past the ones it knows,
//    so each struct below holds every field of its 0.81 layout (all zero unless we set them).
//    The sizes the XLA CPU plugin (0.81) and the CUDA plugin of jax 0.10.2 (0.112) expect were
//    checked to equal these (see kMinimumMinor in pjrt_plugin.h).
// Names follow the documentation so each field can be looked up there.
#include <cstddef>
#include <cstdint>

namespace xlacel::pjrt {

inline constexpr int kApiMajor = 0;

struct PJRT_Extension_Base;  // opaque here: we pass no extensions
struct PJRT_Error;
struct PJRT_Event;
struct PJRT_Client;
struct PJRT_Device;
struct PJRT_DeviceDescription;
struct PJRT_Memory;
struct PJRT_Executable;
struct PJRT_LoadedExecutable;
struct PJRT_Buffer;
struct PJRT_Buffer_MemoryLayout;
struct PJRT_ExecuteContext;
struct PJRT_SerializedExecutable;

// The header every argument struct starts with.
#define XLACEL_PJRT_ARGS_HEADER \
  std::size_t struct_size = 0;  \
  PJRT_Extension_Base* extension_start = nullptr

// Status codes (absl's).
enum PJRT_Error_Code : int32_t { PJRT_Error_Code_UNIMPLEMENTED = 12 };

// Element types, numbered as in the documented enum (those stablehlo::ElementType has).
enum PJRT_Buffer_Type : int32_t {
  PJRT_Buffer_Type_PRED = 1,
  PJRT_Buffer_Type_S8 = 2,
  PJRT_Buffer_Type_S32 = 4,
  PJRT_Buffer_Type_S64 = 5,
  PJRT_Buffer_Type_U8 = 6,
  PJRT_Buffer_Type_U32 = 8,
  PJRT_Buffer_Type_F16 = 10,
  PJRT_Buffer_Type_F32 = 11,
  PJRT_Buffer_Type_BF16 = 13,
};

enum PJRT_HostBufferSemantics : int32_t {
  PJRT_HostBufferSemantics_kImmutableOnlyDuringCall = 0,
  PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes = 1,
};

enum PJRT_NamedValue_Type : int32_t {
  PJRT_NamedValue_kString = 0,
  PJRT_NamedValue_kInt64 = 1,
  PJRT_NamedValue_kInt64List = 2,
  PJRT_NamedValue_kFloat = 3,
  PJRT_NamedValue_kBool = 4,
};

struct PJRT_NamedValue {
  XLACEL_PJRT_ARGS_HEADER;
  const char* name = nullptr;
  std::size_t name_size = 0;
  PJRT_NamedValue_Type type = PJRT_NamedValue_kString;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  std::size_t value_size = 0;  // elements of a list or string; 1 for scalars
};

struct PJRT_Api_Version {
  XLACEL_PJRT_ARGS_HEADER;
  int major_version = 0;
  int minor_version = 0;
};

// --- errors
struct PJRT_Error_Destroy_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Error* error = nullptr;
};
struct PJRT_Error_Message_Args {
  XLACEL_PJRT_ARGS_HEADER;
  const PJRT_Error* error = nullptr;
  const char* message = nullptr;  // out, lives as long as `error`
  std::size_t message_size = 0;   // out
};
struct PJRT_Error_GetCode_Args {
  XLACEL_PJRT_ARGS_HEADER;
  const PJRT_Error* error = nullptr;
  PJRT_Error_Code code{};  // out
};

// --- plugin
struct PJRT_Plugin_Initialize_Args {
  XLACEL_PJRT_ARGS_HEADER;
};
struct PJRT_Plugin_Attributes_Args {
  XLACEL_PJRT_ARGS_HEADER;
  const PJRT_NamedValue* attributes = nullptr;  // out, lives as long as the process
  std::size_t num_attributes = 0;               // out
};

// --- events
struct PJRT_Event_Destroy_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Event* event = nullptr;
};
struct PJRT_Event_Await_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Event* event = nullptr;
};

// --- client
struct PJRT_Client_Create_Args {
  XLACEL_PJRT_ARGS_HEADER;
  const PJRT_NamedValue* create_options = nullptr;
  std::size_t num_options = 0;
  void* kv_get_callback = nullptr;  // key-value store callbacks: multi-process only
  void* kv_get_user_arg = nullptr;
  void* kv_put_callback = nullptr;
  void* kv_put_user_arg = nullptr;
  PJRT_Client* client = nullptr;  // out
  void* kv_try_get_callback = nullptr;
  void* kv_try_get_user_arg = nullptr;
};
struct PJRT_Client_Destroy_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Client* client = nullptr;
};
struct PJRT_Client_PlatformName_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Client* client = nullptr;
  const char* platform_name = nullptr;  // out, owned by the client
  std::size_t platform_name_size = 0;   // out
};
struct PJRT_Client_PlatformVersion_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Client* client = nullptr;
  const char* platform_version = nullptr;  // out, owned by the client
  std::size_t platform_version_size = 0;   // out
};
struct PJRT_Client_AddressableDevices_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Client* client = nullptr;
  PJRT_Device* const* addressable_devices = nullptr;  // out, owned by the client
  std::size_t num_addressable_devices = 0;            // out
};

struct PJRT_Program {
  XLACEL_PJRT_ARGS_HEADER;
  char* code = nullptr;  // "mlir": MLIR bytecode or text
  std::size_t code_size = 0;
  const char* format = nullptr;
  std::size_t format_size = 0;
};
struct PJRT_Client_Compile_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Client* client = nullptr;
  const PJRT_Program* program = nullptr;
  const char* compile_options = nullptr;  // a serialized xla.CompileOptionsProto
  std::size_t compile_options_size = 0;
  PJRT_LoadedExecutable* executable = nullptr;  // out
};

struct PJRT_Client_BufferFromHostBuffer_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Client* client = nullptr;
  const void* data = nullptr;
  PJRT_Buffer_Type type{};
  const int64_t* dims = nullptr;
  std::size_t num_dims = 0;
  const int64_t* byte_strides = nullptr;  // null: dense, row-major
  std::size_t num_byte_strides = 0;
  PJRT_HostBufferSemantics host_buffer_semantics{};
  PJRT_Device* device = nullptr;
  PJRT_Memory* memory = nullptr;
  PJRT_Buffer_MemoryLayout* device_layout = nullptr;  // null: dense, row-major
  PJRT_Event* done_with_host_buffer = nullptr;        // out: `data` may be freed after it
  PJRT_Buffer* buffer = nullptr;                      // out
};

// --- devices
struct PJRT_DeviceDescription_Kind_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_DeviceDescription* device_description = nullptr;
  const char* device_kind = nullptr;  // out, e.g. "NVIDIA H100 80GB HBM3"
  std::size_t device_kind_size = 0;   // out
};
struct PJRT_Device_GetDescription_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Device* device = nullptr;
  PJRT_DeviceDescription* device_description = nullptr;  // out
};

// --- executables
struct PJRT_Executable_Destroy_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Executable* executable = nullptr;
};
struct PJRT_Executable_NumOutputs_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Executable* executable = nullptr;
  std::size_t num_outputs = 0;  // out
};
struct PJRT_Executable_Serialize_Args {
  XLACEL_PJRT_ARGS_HEADER;
  const PJRT_Executable* executable = nullptr;
  const char* serialized_bytes = nullptr;  // out, lives as long as serialized_executable
  std::size_t serialized_bytes_size = 0;   // out
  PJRT_SerializedExecutable* serialized_executable = nullptr;                   // out
  void (*serialized_executable_deleter)(PJRT_SerializedExecutable*) = nullptr;  // out
};
struct PJRT_LoadedExecutable_Destroy_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_LoadedExecutable* executable = nullptr;
};
struct PJRT_LoadedExecutable_AddressableDevices_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_LoadedExecutable* executable = nullptr;
  PJRT_Device* const* addressable_devices = nullptr;  // out, in partition order
  std::size_t num_addressable_devices = 0;            // out
};
// Called twice: with program->code null it sets code_size; then it fills code (format "hlo": a
// serialized HloModuleProto of the optimized, partitioned program).
struct PJRT_Executable_OptimizedProgram_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Executable* executable = nullptr;
  PJRT_Program* program = nullptr;  // in/out
};
struct PJRT_LoadedExecutable_GetExecutable_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_LoadedExecutable* loaded_executable = nullptr;
  PJRT_Executable* executable = nullptr;  // out, destroyed by the caller
};
struct PJRT_ExecuteOptions {
  XLACEL_PJRT_ARGS_HEADER;
  void** send_callbacks = nullptr;  // host send/recv callbacks: unused by our graphs
  void** recv_callbacks = nullptr;
  std::size_t num_send_ops = 0;
  std::size_t num_recv_ops = 0;
  int launch_id = 0;
  const int64_t* non_donatable_input_indices = nullptr;  // none: aliased inputs are donated
  std::size_t num_non_donatable_input_indices = 0;
  PJRT_ExecuteContext* context = nullptr;
  const char* call_location = nullptr;
  std::size_t num_tasks = 0;
  int* task_ids = nullptr;
  int64_t* incarnation_ids = nullptr;
};
struct PJRT_LoadedExecutable_Execute_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_LoadedExecutable* executable = nullptr;
  PJRT_ExecuteOptions* options = nullptr;
  PJRT_Buffer* const* const* argument_lists = nullptr;  // [num_devices][num_args]
  std::size_t num_devices = 0;
  std::size_t num_args = 0;
  PJRT_Buffer** const* output_lists = nullptr;    // [num_devices][num_outputs], caller-allocated
  PJRT_Event** device_complete_events = nullptr;  // optional, [num_devices]
  PJRT_Device* execute_device = nullptr;
};
struct PJRT_Executable_DeserializeAndLoad_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Client* client = nullptr;
  const char* serialized_executable = nullptr;
  std::size_t serialized_executable_size = 0;
  PJRT_LoadedExecutable* loaded_executable = nullptr;           // out
  const char* overridden_serialized_compile_options = nullptr;  // null: the serialized ones
  std::size_t overridden_serialized_compile_options_size = 0;
};

// --- buffers
struct PJRT_Buffer_Destroy_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Buffer* buffer = nullptr;
};
struct PJRT_Buffer_ToHostBuffer_Args {
  XLACEL_PJRT_ARGS_HEADER;
  PJRT_Buffer* src = nullptr;
  PJRT_Buffer_MemoryLayout* host_layout = nullptr;  // null: the buffer's own layout
  void* dst = nullptr;
  std::size_t dst_size = 0;
  PJRT_Event* event = nullptr;  // out: the copy is complete when it is ready
};

#undef XLACEL_PJRT_ARGS_HEADER

// Entry points we call take a pointer to their argument struct and return an error or null.
template <typename Args>
using PjrtFunction = PJRT_Error*(Args*);
// Entries we never call keep their place in the table.
using PjrtUnused = void*;

// The function table, in the documented order, up to PJRT_Buffer_ReadyEvent.
struct PJRT_Api {
  std::size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Api_Version pjrt_api_version;

  void (*PJRT_Error_Destroy)(PJRT_Error_Destroy_Args*);
  void (*PJRT_Error_Message)(PJRT_Error_Message_Args*);
  PjrtFunction<PJRT_Error_GetCode_Args>* PJRT_Error_GetCode;

  PjrtFunction<PJRT_Plugin_Initialize_Args>* PJRT_Plugin_Initialize;
  PjrtFunction<PJRT_Plugin_Attributes_Args>* PJRT_Plugin_Attributes;

  PjrtFunction<PJRT_Event_Destroy_Args>* PJRT_Event_Destroy;
  PjrtUnused PJRT_Event_IsReady;
  PjrtUnused PJRT_Event_Error;
  PjrtFunction<PJRT_Event_Await_Args>* PJRT_Event_Await;
  PjrtUnused PJRT_Event_OnReady;

  PjrtFunction<PJRT_Client_Create_Args>* PJRT_Client_Create;
  PjrtFunction<PJRT_Client_Destroy_Args>* PJRT_Client_Destroy;
  PjrtFunction<PJRT_Client_PlatformName_Args>* PJRT_Client_PlatformName;
  PjrtUnused PJRT_Client_ProcessIndex;
  PjrtFunction<PJRT_Client_PlatformVersion_Args>* PJRT_Client_PlatformVersion;
  PjrtUnused PJRT_Client_Devices;
  PjrtFunction<PJRT_Client_AddressableDevices_Args>* PJRT_Client_AddressableDevices;
  PjrtUnused PJRT_Client_LookupDevice;
  PjrtUnused PJRT_Client_LookupAddressableDevice;
  PjrtUnused PJRT_Client_AddressableMemories;
  PjrtFunction<PJRT_Client_Compile_Args>* PJRT_Client_Compile;
  PjrtUnused PJRT_Client_DefaultDeviceAssignment;
  PjrtFunction<PJRT_Client_BufferFromHostBuffer_Args>* PJRT_Client_BufferFromHostBuffer;

  PjrtUnused PJRT_DeviceDescription_Id;
  PjrtUnused PJRT_DeviceDescription_ProcessIndex;
  PjrtUnused PJRT_DeviceDescription_Attributes;
  PjrtFunction<PJRT_DeviceDescription_Kind_Args>* PJRT_DeviceDescription_Kind;
  PjrtUnused PJRT_DeviceDescription_DebugString;
  PjrtUnused PJRT_DeviceDescription_ToString;

  PjrtFunction<PJRT_Device_GetDescription_Args>* PJRT_Device_GetDescription;
  PjrtUnused PJRT_Device_IsAddressable;
  PjrtUnused PJRT_Device_LocalHardwareId;
  PjrtUnused PJRT_Device_AddressableMemories;
  PjrtUnused PJRT_Device_DefaultMemory;
  PjrtUnused PJRT_Device_MemoryStats;

  PjrtUnused PJRT_Memory_Id;
  PjrtUnused PJRT_Memory_Kind;
  PjrtUnused PJRT_Memory_DebugString;
  PjrtUnused PJRT_Memory_ToString;
  PjrtUnused PJRT_Memory_AddressableByDevices;

  PjrtFunction<PJRT_Executable_Destroy_Args>* PJRT_Executable_Destroy;
  PjrtUnused PJRT_Executable_Name;
  PjrtUnused PJRT_Executable_NumReplicas;
  PjrtUnused PJRT_Executable_NumPartitions;
  PjrtFunction<PJRT_Executable_NumOutputs_Args>* PJRT_Executable_NumOutputs;
  PjrtUnused PJRT_Executable_SizeOfGeneratedCodeInBytes;
  PjrtUnused PJRT_Executable_GetCostAnalysis;
  PjrtUnused PJRT_Executable_OutputMemoryKinds;
  PjrtFunction<PJRT_Executable_OptimizedProgram_Args>* PJRT_Executable_OptimizedProgram;
  PjrtFunction<PJRT_Executable_Serialize_Args>* PJRT_Executable_Serialize;

  PjrtFunction<PJRT_LoadedExecutable_Destroy_Args>* PJRT_LoadedExecutable_Destroy;
  PjrtFunction<PJRT_LoadedExecutable_GetExecutable_Args>* PJRT_LoadedExecutable_GetExecutable;
  PjrtFunction<PJRT_LoadedExecutable_AddressableDevices_Args>*
      PJRT_LoadedExecutable_AddressableDevices;
  PjrtUnused PJRT_LoadedExecutable_Delete;
  PjrtUnused PJRT_LoadedExecutable_IsDeleted;
  PjrtFunction<PJRT_LoadedExecutable_Execute_Args>* PJRT_LoadedExecutable_Execute;
  PjrtFunction<PJRT_Executable_DeserializeAndLoad_Args>* PJRT_Executable_DeserializeAndLoad;
  PjrtUnused PJRT_LoadedExecutable_Fingerprint;

  PjrtFunction<PJRT_Buffer_Destroy_Args>* PJRT_Buffer_Destroy;
  PjrtUnused PJRT_Buffer_ElementType;
  PjrtUnused PJRT_Buffer_Dimensions;
  PjrtUnused PJRT_Buffer_UnpaddedDimensions;
  PjrtUnused PJRT_Buffer_DynamicDimensionIndices;
  PjrtUnused PJRT_Buffer_GetMemoryLayout;
  PjrtUnused PJRT_Buffer_OnDeviceSizeInBytes;
  PjrtUnused PJRT_Buffer_Device;
  PjrtUnused PJRT_Buffer_Memory;
  PjrtUnused PJRT_Buffer_Delete;
  PjrtUnused PJRT_Buffer_IsDeleted;
  PjrtUnused PJRT_Buffer_CopyToDevice;
  PjrtFunction<PJRT_Buffer_ToHostBuffer_Args>* PJRT_Buffer_ToHostBuffer;
};

// Layout checks against the documented ABI (x86-64 / aarch64 LP64): the offsets plugins read.
static_assert(sizeof(PJRT_Api_Version) == 24);
static_assert(offsetof(PJRT_Api, PJRT_Error_Destroy) == 40);
static_assert(offsetof(PJRT_Api, PJRT_LoadedExecutable_Execute) == 40 + 8 * 55);
static_assert(offsetof(PJRT_Api, PJRT_Buffer_ToHostBuffer) == 40 + 8 * 70);
static_assert(sizeof(PJRT_NamedValue) == 56);
static_assert(sizeof(PJRT_Client_Create_Args) == 88);
static_assert(sizeof(PJRT_Program) == 48);
static_assert(sizeof(PJRT_Client_Compile_Args) == 56);
static_assert(offsetof(PJRT_Client_BufferFromHostBuffer_Args, host_buffer_semantics) == 72);
static_assert(sizeof(PJRT_Client_BufferFromHostBuffer_Args) == 120);
static_assert(sizeof(PJRT_Executable_Serialize_Args) == 56);
static_assert(offsetof(PJRT_ExecuteOptions, non_donatable_input_indices) == 56);
static_assert(sizeof(PJRT_ExecuteOptions) == 112);
static_assert(sizeof(PJRT_LoadedExecutable_Execute_Args) == 80);
static_assert(sizeof(PJRT_Executable_DeserializeAndLoad_Args) == 64);
static_assert(sizeof(PJRT_Buffer_ToHostBuffer_Args) == 56);
static_assert(sizeof(PJRT_LoadedExecutable_AddressableDevices_Args) == 40);
static_assert(sizeof(PJRT_Executable_OptimizedProgram_Args) == 32);
static_assert(offsetof(PJRT_Api, PJRT_Executable_OptimizedProgram) == 40 + 8 * 48);
static_assert(offsetof(PJRT_Api, PJRT_LoadedExecutable_AddressableDevices) == 40 + 8 * 52);

}  // namespace xlacel::pjrt
