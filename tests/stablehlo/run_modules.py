#!/usr/bin/env python3
"""Runs StableHLO op modules compiled for llvm-cpu through IREE's Python runtime (local-task
driver), or compiled and run by XLA's CPU client (jax/jaxlib), and compares each result with a
numpy reference.

Usage: run_modules.py MANIFEST.json

The manifest's "runtime" (default "iree") picks the runtime:
  "iree"  each case names a compiled vmfb, module and function (below)
  "xla"   each case names "mlir": a module with one public entry function @main, which XLA
          compiles itself (jax.extend.backend "cpu" client, compile_and_load) and runs on
          device buffers (jax.device_put, x64 enabled so int64 inputs stay int64).
          compile_and_load gets an explicit xla_client.CompileOptions(), as jax itself passes:
          without one (the binding's default argument) XLA CPU compiles with other debug
          options, under which stablehlo.maximum/minimum drop a NaN operand (max(1, NaN) = 1)

The manifest (written by tests/stablehlo_iree_test.cpp) is {"cases": [...]}, each case:
  op         name reported back
  mlir       (xla) the case's own module
  module     MLIR module name (the VM module to call into)
  function   the entry function in it
  vmfb       compiled module path (cases may share one)
  seed       seed of `rng` (numpy.random.default_rng) for the input expressions
  inputs     [{"expr", "dtype", "shape"}]: a Python expression over np, rng, bf16 (ml_dtypes)
             giving input i, cast to dtype; later inputs and the reference see it as x<i>
  results    [{"dtype", "shape"}]: what the module must return
  reference  Python code that sets `out` (one array, or a tuple: one per result)
  rtol, atol 0 and 0: results must equal the reference exactly (NaN equals NaN); otherwise
             numpy.allclose in float64
Prints one line per case: RESULT {"op": ..., "ok": true/false, "message": ...}.
"""
import json
import sys
import traceback

import ml_dtypes
import numpy as np

DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "bool": np.dtype(np.bool_),
    "int8": np.dtype(np.int8),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint32": np.dtype(np.uint32),
}
FLOATS = {DTYPES["float32"], DTYPES["float16"], DTYPES["bfloat16"]}


def describe(a):
    return f"{a.dtype}{list(a.shape)}"


def compare(index, got, want, spec, rtol, atol):
    dtype = DTYPES[spec["dtype"]]
    if got.dtype != dtype or list(got.shape) != spec["shape"]:
        return f"result {index} is {describe(got)}, expected {dtype}{spec['shape']}"
    want = np.asarray(want)
    if list(want.shape) != spec["shape"]:
        return f"reference {index} is {describe(want)}, expected shape {spec['shape']}"
    if dtype in FLOATS:
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        if rtol == 0 and atol == 0:
            w = want.astype(dtype).astype(np.float64)  # the reference rounded like the result
            ok = np.array_equal(g, w, equal_nan=True)
        else:
            ok = np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        if ok:
            return None
        err = np.abs(g - w)
        err[np.isnan(err) & (np.isnan(g) == np.isnan(w))] = 0
        worst = np.unravel_index(np.nanargmax(np.where(np.isnan(err), np.inf, err)), err.shape) if err.size else ()
        return (f"result {index} differs (rtol {rtol}, atol {atol}): at {tuple(int(i) for i in worst)} "
                f"got {g[worst]!r}, want {w[worst]!r}; got {got.tolist()} want {w.tolist()}")[:2000]
    w = want.astype(dtype)
    if np.array_equal(got, w):
        return None
    return f"result {index} differs: got {got.tolist()} want {w.tolist()}"[:2000]


_contexts = {}


def entry(case, config):
    """The case's entry function; one runtime context per compiled module file."""
    if config == "xla":
        return xla_entry(case)
    import iree.runtime as rt

    if case["vmfb"] not in _contexts:
        context = rt.SystemContext(config=config)
        with open(case["vmfb"], "rb") as f:
            context.add_vm_module(rt.VmModule.copy_buffer(context.instance, f.read()))
        _contexts[case["vmfb"]] = context
    return _contexts[case["vmfb"]].modules[case["module"]][case["function"]]


def xla_entry(case):
    """Compiles the case's module with XLA CPU; returns a callable over numpy inputs."""
    import jax
    import jax.extend
    from jax._src.lib import xla_client

    backend = jax.extend.backend.get_backend("cpu")
    device = backend.devices()[0]
    with open(case["mlir"]) as f:
        executable = backend.compile_and_load(f.read(), backend.devices()[:1],
                                              xla_client.CompileOptions())

    def call(*inputs):
        return executable.execute([jax.device_put(x, device) for x in inputs])

    return call


def run_case(case, config):
    rng = np.random.default_rng(case["seed"])
    env = {"np": np, "rng": rng, "bf16": ml_dtypes.bfloat16}
    inputs = []
    for i, spec in enumerate(case["inputs"]):
        value = np.asarray(eval(spec["expr"], env)).astype(DTYPES[spec["dtype"]])
        if list(value.shape) != spec["shape"]:
            return f"input {i} expression gives shape {list(value.shape)}, expected {spec['shape']}"
        env[f"x{i}"] = value
        inputs.append(value)
    reference_inputs = [x.copy() for x in inputs]  # a donated input may be overwritten
    outputs = entry(case, config)(*inputs)
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    outputs = [np.asarray(o.to_host() if hasattr(o, "to_host") else o) for o in outputs]
    for i, x in enumerate(reference_inputs):
        env[f"x{i}"] = x
    exec(case["reference"], env)
    want = env["out"]
    if not isinstance(want, tuple):
        want = (want,)
    if len(outputs) != len(case["results"]) or len(want) != len(case["results"]):
        return (f"{len(outputs)} results and {len(want)} references, expected "
                f"{len(case['results'])}")
    problems = [compare(i, g, w, spec, case["rtol"], case["atol"])
                for i, (g, w, spec) in enumerate(zip(outputs, want, case["results"]))]
    problems = [p for p in problems if p]
    return "; ".join(problems) if problems else None


def main():
    with open(sys.argv[1]) as f:
        manifest = json.load(f)
    cases = manifest["cases"]
    if manifest.get("runtime", "iree") == "xla":
        import jax

        jax.config.update("jax_enable_x64", True)  # keep int64/uint32 inputs as they are
        config = "xla"
    else:
        import iree.runtime as rt

        config = rt.Config("local-task")
    for case in cases:
        try:
            problem = run_case(case, config)
        except Exception:  # reported per case; the C++ test names the op
            problem = traceback.format_exc(limit=3)
        print("RESULT " + json.dumps({"op": case["op"], "ok": problem is None,
                                      "message": problem or ""}), flush=True)


if __name__ == "__main__":
    main()
