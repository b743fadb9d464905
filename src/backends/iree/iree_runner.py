"""The Python half of xlacel's IREE device (iree_device.cpp), run in its embedded interpreter.

It knows no model: modules arrive as .vmfb files, buffers as bytes + element type + shape, and
a call takes and returns IREE buffer views in the order of the graph's arguments and results.
It drives iree.runtime's low-level VM API (VmContext.invoke on lists of buffer views) rather
than FunctionInvoker, whose per-call argument packing costs more than small graphs take to run.
"""

import ml_dtypes
import numpy as np
import iree.runtime as rt

# Element types by xlacel name (stablehlo::to_string): the numpy type that carries the bytes,
# and IREE's element type. bf16 needs ml_dtypes: IREE checks the numpy type of what it copies.
_ELEMENTS = {
    "f32": (np.float32, rt.HalElementType.FLOAT_32),
    "bf16": (ml_dtypes.bfloat16, rt.HalElementType.BFLOAT_16),
    "f16": (np.float16, rt.HalElementType.FLOAT_16),
    "i8": (np.int8, rt.HalElementType.SINT_8),
    "i32": (np.int32, rt.HalElementType.SINT_32),
    "i64": (np.int64, rt.HalElementType.SINT_64),
    "ui8": (np.uint8, rt.HalElementType.UINT_8),
    "ui32": (np.uint32, rt.HalElementType.UINT_32),
}

# The --task_topology_group_count this process's local-task driver was created with (0: IREE's
# default), or None before it exists. iree.runtime caches one driver per name for the whole
# process and the driver creates its worker threads from the flags once, so the worker count
# can be chosen only by the first device opened.
_local_task_workers = None


def _element(name):
    try:
        return _ELEMENTS[name]
    except KeyError:
        raise ValueError(f"element type {name} is not supported by the IREE device "
                         f"(supported: {', '.join(_ELEMENTS)})") from None


def _set_local_task_workers(threads, default_threads):
    # IREE's flags are set once per process: the first CPU device sets the count (its threads,
    # else default_threads), and later ones must ask for the same or for the default.
    global _local_task_workers
    if _local_task_workers is None:
        _local_task_workers = threads or default_threads
        rt.flags.parse_flags(f"--task_topology_group_count={_local_task_workers}")
    elif threads not in (0, _local_task_workers):
        raise ValueError(f"cannot use {threads} threads: IREE's local-task driver already runs "
                         f"{_local_task_workers} worker threads in this process (set once per "
                         "process)")


def _result_count(function):
    # "sync func @main(%input0: ...) -> (%output0: tensor<4xf32>, %output1: ...)"
    declaration = function.reflection.get("iree.abi.declaration")
    if declaration is None:
        raise ValueError(f"function {function.name} has no iree.abi.declaration reflection")
    _, arrow, results = declaration.partition("->")
    return results.count("%output") if arrow else 0


class Entry:
    """One module's `main`, loaded in its own VM context with the device's HAL module."""

    def __init__(self, context, function, num_results):
        self.context = context
        self.function = function
        self.num_results = num_results


class Device:
    def __init__(self, driver, threads, default_threads):
        if driver == "local-task":
            _set_local_task_workers(threads, default_threads)
        self.config = rt.Config(driver)  # opens the device: a missing GPU fails here
        self.device = self.config.device
        self.instance = self.config.vm_instance
        # The CPU drivers compute on host memory where it is (adopt).
        self.host_memory = driver.startswith("local-")

    def load(self, vmfb_path, module_name):
        module = rt.VmModule.mmap(self.instance, vmfb_path)
        if module.name != module_name:
            raise ValueError(f"{vmfb_path} holds module '{module.name}', not '{module_name}'")
        function = module.lookup_function("main")
        if function is None:
            raise ValueError(f"module '{module_name}' in {vmfb_path} has no function main")
        context = rt.VmContext(self.instance, modules=[*self.config.default_vm_modules, module])
        return Entry(context, function, _result_count(function))

    def upload(self, data, element, shape):
        numpy_type, hal_type = _element(element)
        array = np.frombuffer(data, dtype=numpy_type).reshape(shape)
        return self.device.allocator.allocate_buffer_copy(
            memory_type=rt.MemoryType.DEVICE_LOCAL, allowed_usage=rt.BufferUsage.DEFAULT,
            device=self.device, buffer=array, element_type=hal_type)

    def adopt(self, array, element, shape):
        # The bytes of `array` (host memory the caller leaves unchanged, 64-byte aligned) as a
        # buffer view without a copy: the CPU device computes on them where they are. Returns the
        # view and the imported HalBuffer: the Python HalBuffer, not the view, holds `array` (and
        # what owns its memory), so the caller keeps both.
        numpy_type, hal_type = _element(element)
        typed = array.view(numpy_type).reshape(shape)
        buffer = self.device.allocator.import_host_allocation(
            typed, memory_type=rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE,
            allowed_usage=rt.BufferUsage.DEFAULT)
        return rt.HalBufferView(buffer, list(shape), hal_type), buffer

    def zeros(self, element, shape):
        # A buffer view of zeros and what keeps its memory (None where the view does). np.zeros
        # maps the kernel's zero page: its pages cost no memory, and no time, until written.
        # The CPU devices adopt it as it is (for a KV cache, a copy at start, and its memory until
        # positions are written, saved: docs/PERFORMANCE.md, "KV cache from zero pages"); others get
        # a copy.
        numpy_type, _ = _element(element)
        if not self.host_memory:
            return self.upload(np.zeros(shape, numpy_type), element, shape), None
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(numpy_type).itemsize
        raw = np.zeros(size + 64, np.uint8)
        start = -raw.ctypes.data % 64  # adopt wants 64-byte aligned memory
        return self.adopt(raw[start:start + size], element, shape)

    def call(self, entry, args):
        arguments = rt.VmVariantList(len(args))
        for arg in args:
            arguments.push_ref(arg)
        results = rt.VmVariantList(entry.num_results)
        # `main` has IREE's sync ABI: the results are ready when invoke returns.
        entry.context.invoke(entry.function, arguments, results)
        return [results.get_as_object(i, rt.HalBufferView) for i in range(results.size)]

    def read(self, buffer_view, out):
        # DeviceArray maps host-visible memory (CPU) or copies through a staging buffer (GPU).
        host = rt.DeviceArray(self.device, buffer_view).to_host()
        destination = np.frombuffer(out, dtype=np.uint8)
        if host.nbytes != destination.nbytes:
            raise ValueError(f"the buffer holds {host.nbytes} bytes, not {destination.nbytes}")
        np.copyto(destination, host.reshape(-1).view(np.uint8))
