#!/usr/bin/env python3
"""Runs StableHLO op modules compiled for llvm-cpu through IREE's Python runtime (local-task
driver) and compares each result with a numpy reference.

Usage: run_modules.py MANIFEST.json

The manifest (written by tests/stablehlo_iree_test.cpp) is {"cases": [...]}, each case:
  op         name reported back
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
import iree.runtime as rt

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
    if case["vmfb"] not in _contexts:
        context = rt.SystemContext(config=config)
        with open(case["vmfb"], "rb") as f:
            context.add_vm_module(rt.VmModule.copy_buffer(context.instance, f.read()))
        _contexts[case["vmfb"]] = context
    return _contexts[case["vmfb"]].modules[case["module"]][case["function"]]


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
        cases = json.load(f)["cases"]
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
