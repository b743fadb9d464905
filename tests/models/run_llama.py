"""Runs xlacel's Llama graphs with IREE (llvm-cpu, host CPU) or XLA CPU (jax/jaxlib) and
prints one JSON result.

Usage: run_llama.py JOB.json

JOB.json (written by tests/models_llama_test.cpp):
  runtime          "iree" (default): iree-compile for llvm-cpu, run by iree.runtime (local-task);
                   "xla": each graph compiled by XLA's CPU client (jax.extend.backend "cpu",
                   compile_and_load; not cached, it takes well under a second) and run on device
                   buffers: weights uploaded once (jax.device_put), KV caches passed back each
                   step (the graphs alias them to outputs, so XLA donates them in place)
  cache_dir        where compiled .vmfb files are kept, named by a hash of MLIR text + flags
  compile_flags    iree-compile flags (target device/backend)
  graphs           {"prefill": {"mlir", "bucket"}, "decode": {"mlir"}, "decode-logits": {"mlir"}}
                   (graphs a job does not use may be absent)
  weights          the manifest written by models::write_weight_file (argument order)
  capacity, num_layers, num_kv_heads, head_dim, cache_dtype
  prompts          [{"name", "ids", "steps", "mode", "forced"?, "logit_ids"?}]
     mode "greedy":  chunked prefill (its next_token) then steps-1 `decode` calls on our own
                     tokens -> "tokens"
     mode "logits":  chunked prefill (its logits) then steps-1 `decode-logits` calls fed with
                     `forced` (the reference tokens: teacher forcing, so every step's logits are
                     comparable); -> "argmax" per step and "logits" per step at logit_ids[step]
                     (all of them when absent and the vocabulary is small)
     mode "stepwise": the prompt fed one token at a time through decode-logits -> "logits" of
                     the last prompt token (a chunked-prefill cross-check)

Output (stdout, one line "RESULT {json}"): {"runtime", "compile": {graph: {"seconds", "cached",
"vmfb" (iree)}},
"load_seconds", "prompts": [{"name", "mode", "seconds", ...}]}.
"""

import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
import time

import ml_dtypes
import numpy as np

DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}


def hal_type(dtype):
    import iree.runtime as rt

    return {"float32": rt.HalElementType.FLOAT_32, "float16": rt.HalElementType.FLOAT_16,
            "bfloat16": rt.HalElementType.BFLOAT_16}[dtype]


def compile_graph(mlir_path, flags, cache_dir):
    """Compiles with iree-compile (the venv's, via iree.compiler) unless a vmfb for this exact
    MLIR text and flags is already in cache_dir."""
    with open(mlir_path, "rb") as f:
        text = f.read()
    key = hashlib.sha256(text + b"\0" + " ".join(flags).encode()).hexdigest()[:24]
    vmfb = os.path.join(cache_dir, key + ".vmfb")
    if os.path.exists(vmfb):
        return {"seconds": 0.0, "cached": True, "vmfb": vmfb}
    import iree.compiler.tools as tools

    start = time.monotonic()
    partial = vmfb + f".partial{os.getpid()}"
    tools.compile_file(mlir_path, output_file=partial, extra_args=flags)
    os.replace(partial, vmfb)
    return {"seconds": time.monotonic() - start, "cached": False, "vmfb": vmfb}


def load_weights(job, upload):
    """The weights in argument order, each numpy view of the raw file passed through upload."""
    with open(job["weights"]) as f:
        manifest = json.load(f)
    data = np.memmap(manifest["data"], dtype=np.uint8, mode="r")
    weights = []
    for t in manifest["tensors"]:
        view = np.ndarray(tuple(t["shape"]), dtype=DTYPES[t["dtype"]], buffer=data,
                          offset=t["offset"])
        weights.append(upload(view, t["dtype"]))
    return weights


class Model:
    """The graphs' entry points and uploaded weights; subclasses say how to call and upload."""

    def empty_cache(self):
        job = self.job
        shape = (job["num_kv_heads"], job["capacity"], job["head_dim"])
        dtype = job["cache_dtype"]
        # A fresh host array each: a runtime may keep using (or donate) what it was given.
        return [self.upload(np.zeros(shape, DTYPES[dtype]), dtype)
                for _ in range(2 * job["num_layers"])]

    def prefill(self, ids, cache):
        """Chunks of `bucket` tokens; a last chunk that would overrun the capacity re-feeds
        earlier tokens (start = len - bucket). Returns (next_token, logits, cache)."""
        bucket = self.job["graphs"]["prefill"]["bucket"]
        capacity = self.job["capacity"]
        start = 0
        out = None
        while start < len(ids):
            chunk_start = start
            if chunk_start + bucket > capacity:
                chunk_start = max(0, len(ids) - bucket)
            chunk = ids[chunk_start:chunk_start + bucket]
            valid = len(chunk)
            tokens = np.zeros(bucket, np.int32)
            tokens[:valid] = chunk
            out = self.entries["prefill"](tokens, np.array(chunk_start, np.int32),
                                          np.array(valid, np.int32), *self.weights, *cache)
            cache = list(out[2:])
            start = chunk_start + valid
        return int(host(out[0])), out[1], cache

    def decode(self, token, position, cache):
        out = self.entries["decode"](np.array([token], np.int32), np.array(position, np.int32),
                                     *self.weights, *cache)
        return int(host(out[0])), list(out[1:])

    def decode_logits(self, token, position, cache):
        out = self.entries["decode-logits"](np.array([token], np.int32),
                                            np.array(position, np.int32), *self.weights, *cache)
        return out[0], list(out[1:])


class XlaModel(Model):
    def __init__(self, job, executables):
        import jax.extend

        self.job = job
        self.device = jax.extend.backend.get_backend("cpu").devices()[0]
        self.entries = {name: self.entry(exe) for name, exe in executables.items()}
        self.weights = load_weights(job, self.upload)

    def upload(self, array, dtype=None):
        import jax

        return jax.device_put(array, self.device)

    def entry(self, executable):
        import jax

        def call(*args):
            # Host scalars/token arrays go up each call; weights and caches are device arrays.
            return executable.execute([a if isinstance(a, jax.Array) else self.upload(a)
                                       for a in args])

        return call


class IreeModel(Model):
    def __init__(self, job, vmfbs, config):
        import iree.runtime as rt

        self.job = job
        self.config = config
        self.device = config.device
        self.entries = {}
        for name, info in vmfbs.items():
            context = rt.SystemContext(config=config)
            context.add_vm_module(rt.VmModule.mmap(context.instance, info["vmfb"]))
            module = "xlacel_" + name.replace("-", "_")  # emit_graph's module name
            self.entries[name] = context.modules[module]["main"]
        self.weights = load_weights(job, self.upload)

    def upload(self, array, dtype):
        import iree.runtime as rt

        return rt.asdevicearray(self.device, array, element_type=hal_type(dtype))


def host(array):
    return np.asarray(array.to_host() if hasattr(array, "to_host") else array)


def pick(logits, ids):
    return [float(logits[i]) for i in ids] if ids is not None else logits.tolist()


def run_prompt(model, prompt):
    ids = prompt["ids"]
    steps = prompt.get("steps", 0)
    mode = prompt["mode"]
    logit_ids = prompt.get("logit_ids")
    result = {"name": prompt["name"], "mode": mode}
    start = time.monotonic()
    cache = model.empty_cache()
    if mode == "greedy":
        token, _, cache = model.prefill(ids, cache)
        tokens = [token]
        prefilled = time.monotonic()
        for step in range(1, steps):
            token, cache = model.decode(token, len(ids) + step - 1, cache)
            tokens.append(token)
        result["tokens"] = tokens
        result["prefill_seconds"] = prefilled - start
        result["decode_seconds_per_step"] = (time.monotonic() - prefilled) / max(1, steps - 1)
    elif mode == "logits":
        _, logits, cache = model.prefill(ids, cache)
        logits = host(logits)
        argmax = [int(np.argmax(logits))]
        values = [pick(logits, logit_ids[0] if logit_ids else None)]
        forced = prompt["forced"]
        for step in range(1, steps):
            logits, cache = model.decode_logits(forced[step - 1], len(ids) + step - 1, cache)
            logits = host(logits)
            argmax.append(int(np.argmax(logits)))
            values.append(pick(logits, logit_ids[step] if logit_ids else None))
        result["argmax"] = argmax
        result["logits"] = values
    elif mode == "stepwise":
        logits = None
        for position, token in enumerate(ids):
            logits, cache = model.decode_logits(token, position, cache)
        chunked_token, chunked, _ = model.prefill(ids, model.empty_cache())
        result["stepwise_logits"] = host(logits).tolist()
        result["chunked_logits"] = host(chunked).tolist()
        result["chunked_token"] = chunked_token
    else:
        raise ValueError(f"unknown mode {mode}")
    result["seconds"] = time.monotonic() - start
    return result


def compile_xla(mlir_path):
    """XLA CPU compile of one graph (its single public @main). An explicit CompileOptions, as
    jax itself passes: the binding's default argument gives other debug options (e.g.
    stablehlo.maximum/minimum that drop a NaN operand)."""
    import jax.extend
    from jax._src.lib import xla_client

    backend = jax.extend.backend.get_backend("cpu")
    with open(mlir_path) as f:
        text = f.read()
    start = time.monotonic()
    executable = backend.compile_and_load(text, backend.devices()[:1],
                                          xla_client.CompileOptions())
    return executable, {"seconds": time.monotonic() - start, "cached": False}


def main_xla(job):
    compiled, executables = {}, {}
    for name, g in job["graphs"].items():
        executables[name], compiled[name] = compile_xla(g["mlir"])
    if job.get("compile_only"):
        print("RESULT " + json.dumps({"runtime": "xla", "compile": compiled}), flush=True)
        return
    start = time.monotonic()
    model = XlaModel(job, executables)
    load_seconds = time.monotonic() - start
    prompts = [run_prompt(model, p) for p in job["prompts"]]
    print("RESULT " + json.dumps({"runtime": "xla", "compile": compiled,
                                  "load_seconds": load_seconds, "prompts": prompts}), flush=True)


def main():
    with open(sys.argv[1]) as f:
        job = json.load(f)
    runtime = job.get("runtime", "iree")
    if runtime == "xla":
        main_xla(job)
        return
    if runtime != "iree":
        raise ValueError(f"unknown runtime {runtime}")
    import iree.runtime as rt

    os.makedirs(job["cache_dir"], exist_ok=True)
    flags = job["compile_flags"]
    compiled = {}
    # Two compiles at a time (the graphs are independent).
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(compile_graph, g["mlir"], flags, job["cache_dir"])
                   for name, g in job["graphs"].items()}
        for name, future in futures.items():
            compiled[name] = future.result()
    if job.get("compile_only"):
        print("RESULT " + json.dumps({"runtime": "iree", "compile": compiled}), flush=True)
        return
    start = time.monotonic()
    config = rt.Config("local-task")
    model = IreeModel(job, compiled, config)
    load_seconds = time.monotonic() - start
    prompts = [run_prompt(model, p) for p in job["prompts"]]
    print("RESULT " + json.dumps({"runtime": "iree", "compile": compiled,
                                  "load_seconds": load_seconds, "prompts": prompts}), flush=True)


if __name__ == "__main__":
    main()
