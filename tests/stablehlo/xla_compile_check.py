#!/usr/bin/env python3
"""Optional, manual check (not run by ctest; needs `pip install jax[cpu]` in some venv): compiles
every per-op module that tests/stablehlo_iree_test.cpp wrote with XLA's CPU PJRT client, i.e.
XLA's own StableHLO parser.

Usage: python xla_compile_check.py BUILD_DIR/test-scratch/stablehlo_iree/llvm-cpu

tests/stablehlo_iree_test.cpp's StablehloXla test also runs them (run_modules.py, runtime
"xla"). XLA compiles one entry point per executable, which must be named `main`, so the combined
all_ops.mlir (many public functions) is skipped.
"""
import glob
import sys

import jax.extend
from jax._src.lib import xla_client

backend = jax.extend.backend.get_backend("cpu")
failures = 0
paths = [p for p in sorted(glob.glob(sys.argv[1] + "/*.mlir"))
         if not p.endswith(("all_ops.mlir", "probe.mlir"))]
for path in paths:
    with open(path) as f:
        text = f.read()
    try:
        backend.compile_and_load(text, backend.devices()[:1], xla_client.CompileOptions())
    except Exception as e:  # report every module, not just the first
        failures += 1
        print(f"FAIL {path}: {str(e)[:800]}")
print(f"XLA compiled {len(paths) - failures} of {len(paths)} modules")
sys.exit(1 if failures else 0)
