#!/usr/bin/env python3
"""What the all-reduces of one tensor-parallel decode step cost on N CPU devices of one process.

A decode step over N devices all-reduces a [B, hidden] f32 activation twice per layer (after the
attention output and the MLP; docs/ARCHITECTURE.md, "Tensor parallelism"). This times a jitted
chain of `count` such all-reduces over N XLA CPU devices (jax from the project venv: the same
in-process collectives as xla-cpu-pjrt) against the same chain without them, and prints the
difference per step. The thread pool gets N threads beyond the cores, as xlacel sizes it (with
only as many threads as devices XLA's CPU collectives can wait forever and abort).

    .venv/bin/python tools/tensor_parallel/allreduce_cost.py --devices 3 --hidden 576 --count 61
"""
import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=576, help="SmolLM2-135M: 576")
    parser.add_argument("--count", type=int, default=61, help="all-reduces per step (2 x layers + 1)")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
    os.environ.setdefault("PJRT_NPROC", str((os.cpu_count() or 1) + args.devices))

    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, PartitionSpec

    mesh = Mesh(jax.devices()[: args.devices], ("tp",))

    def chain(x, collective: bool):
        def body(v):
            for _ in range(args.count):
                v = v * 1.0001  # stands for the layer's work, so the chain is not folded away
                if collective:
                    v = jax.lax.psum(v, "tp") * (1.0 / args.devices)
            return v

        return jax.shard_map(body, mesh=mesh, in_specs=PartitionSpec(), out_specs=PartitionSpec())(x)

    for batch in args.batch:
        x = jnp.ones((batch, args.hidden), jnp.float32)
        seconds = {}
        for collective in (False, True):
            step = jax.jit(lambda v, c=collective: chain(v, c))
            step(x).block_until_ready()
            start = time.perf_counter()
            for _ in range(args.steps):
                y = step(x)
            y.block_until_ready()
            seconds[collective] = (time.perf_counter() - start) / args.steps
        cost = seconds[True] - seconds[False]
        print(
            f"{args.devices} devices, B={batch}: {args.count} all-reduces of [{batch}, {args.hidden}] f32 "
            f"cost {cost * 1e3:.2f} ms per step ({cost / args.count * 1e6:.1f} us each; chain "
            f"{seconds[True] * 1e3:.2f} ms with, {seconds[False] * 1e3:.2f} ms without)"
        )


if __name__ == "__main__":
    main()
