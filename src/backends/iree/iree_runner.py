"""The Python half of xlacel's IREE backend (iree_backend.cpp), run in its embedded interpreter.

It holds what must stay on the IREE device between calls: the loaded modules, the uploaded
weights and the KV caches. Every graph aliases its caches to its results, so IREE writes the
new rows into the same device buffers (no copy of the cache per step) and the results simply
replace the handles kept here. Only the token id, or the logits when asked, comes back.
"""

import ml_dtypes
import numpy as np
import iree.runtime as rt

# Element types by xlacel name: the numpy type that carries the bytes, and IREE's type.
_ELEMENTS = {
    "f32": (np.float32, rt.HalElementType.FLOAT_32),
    "bf16": (ml_dtypes.bfloat16, rt.HalElementType.BFLOAT_16),  # IREE checks the numpy type
    "f16": (np.float16, rt.HalElementType.FLOAT_16),
}


class Runner:
    def __init__(self, driver):
        self.config = rt.Config(driver)
        self.device = self.config.device
        self.entries = {}
        self.weights = []
        self.caches = []

    def load_module(self, graph, vmfb_path, module_name):
        context = rt.SystemContext(config=self.config)
        context.add_vm_module(rt.VmModule.mmap(context.instance, vmfb_path))
        self.entries[graph] = context.modules[module_name]["main"]

    def add_weight(self, data, element, shape):
        numpy_type, hal_type = _ELEMENTS[element]
        array = np.frombuffer(data, dtype=numpy_type).reshape(shape)
        self.weights.append(rt.asdevicearray(self.device, array, element_type=hal_type))

    def make_caches(self, count, shape, element):
        numpy_type, hal_type = _ELEMENTS[element]
        zeros = np.zeros(shape, numpy_type)
        self.caches = [rt.asdevicearray(self.device, zeros, element_type=hal_type)
                       for _ in range(count)]

    def prefill(self, tokens, start, valid, want_logits):
        out = self.entries["prefill"](np.frombuffer(tokens, np.int32), np.array(start, np.int32),
                                      np.array(valid, np.int32), *self.weights, *self.caches)
        self.caches = out[2:]
        logits = out[1].to_host() if want_logits else None
        return int(out[0].to_host()), logits

    def decode(self, token, position):
        out = self.entries["decode"](np.array([token], np.int32), np.array(position, np.int32),
                                     *self.weights, *self.caches)
        self.caches = out[1:]
        return int(out[0].to_host())

    def decode_logits(self, token, position):
        out = self.entries["decode-logits"](np.array([token], np.int32), np.array(position, np.int32),
                                            *self.weights, *self.caches)
        self.caches = out[1:]
        return out[0].to_host()
