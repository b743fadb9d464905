#!/usr/bin/env python3
"""Where an IREE CPU run's time goes, by compiled function: `perf record` over an xlacel command,
then each sample in IREE's executables named by the function it fell in.

IREE loads a module's executables (ELF images inside the .vmfb) into anonymous memory, so perf
names none of their code. This script carves those images out of the compile cache's .vmfb
files, matches each anonymous executable mapping perf saw to the image whose code segment spans
the same number of pages, and looks the sample's offset up in that image's symbol table: the
hand-written kernels keep their names there (xlacel_planar_matmul_int8_rows_workgroup, ...);
IREE's own dispatches have none and are counted together.

    .venv/bin/python tools/kernels/dispatch_profile.py -- build/xlacel bench -m FILE \\
        --threads 2 --prompt-tokens 1 --gen-tokens 128 -r 1 --no-cold-compile

Needs perf (Debian's linux-perf) with the cpu-clock event. Samples are counted while the
executables' code runs: the window is from the first such sample to the last, and each thread's
busy share of it is printed, so that time outside the code (waiting, the host) shows too.
"""
import argparse
import bisect
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile

PAGE = 4096


def elf_images(data):
    """The ELF64 images inside a .vmfb's bytes (each from its magic to its section headers)."""
    at = 0
    while (at := data.find(b"\x7fELF\x02\x01", at)) >= 0:
        section_headers = struct.unpack_from("<Q", data, at + 0x28)[0]
        entry_size, entries = struct.unpack_from("<HH", data, at + 0x3A)
        end = at + section_headers + entry_size * entries
        if section_headers and end <= len(data):
            yield data[at:end]
        at += 4


def code_span(image):
    """(first page, bytes of whole pages) of an image's executable LOAD segment, or None."""
    program_headers = struct.unpack_from("<Q", image, 0x20)[0]
    entry_size, entries = struct.unpack_from("<HH", image, 0x36)
    for i in range(entries):
        kind, flags, _, vaddr, _, _, memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", image, program_headers + i * entry_size)
        if kind == 1 and flags & 1:  # PT_LOAD, executable
            first = vaddr // PAGE * PAGE
            return first, (vaddr + memsz + PAGE - 1) // PAGE * PAGE - first
    return None


def functions(image_path):
    """Sorted (address, size, name) of an image's named functions, from nm."""
    out = subprocess.run(["nm", "-n", "-S", "--defined-only", image_path], capture_output=True,
                         text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in "tTwW":
            found.append((int(fields[0], 16), int(fields[1], 16), fields[3]))
    return found


def images_by_span(cache, work):
    """{code bytes: (first page, the functions' addresses, functions)} of every executable image
    in the compile cache."""
    spans = {}
    for name in sorted(os.listdir(cache)):
        if not name.endswith(".vmfb"):
            continue
        with open(os.path.join(cache, name), "rb") as f:
            data = f.read()
        for n, image in enumerate(elf_images(data)):
            span = code_span(image)
            if span is None or span[1] in spans:
                continue
            path = os.path.join(work, f"{name}.{n}.so")
            with open(path, "wb") as f:
                f.write(image)
            named = functions(path)
            spans[span[1]] = (span[0], [a for a, _, _ in named], named)
    return spans


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default=os.path.join(
        os.environ.get("XLACEL_CACHE", os.path.expanduser("~/.cache/xlacel")), "compiled"),
        help="the compile cache holding the run's .vmfb files")
    parser.add_argument("--data", help="perf.data to read (then no command is run)")
    parser.add_argument("--frequency", type=int, default=4000, help="samples per second")
    parser.add_argument("command", nargs="*", help="the command to profile (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        data = args.data or os.path.join(work, "perf.data")
        if not args.data:
            if not args.command:
                parser.error("give a command after -- or --data")
            subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", str(args.frequency),
                            "-o", data, "-q", "--", *args.command], check=True)
        spans = images_by_span(args.cache, work)
        script = subprocess.run(
            ["perf", "script", "-i", data, "--show-mmap-events", "-F", "tid,time,ip,sym,dso"],
            capture_output=True, text=True, check=True).stdout
        # Anonymous executable mappings: [start, end) -> their image's images_by_span entry.
        mappings = []
        mmap = re.compile(r"PERF_RECORD_MMAP2? \d+/\d+: \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) .*r-xp //anon")
        by_function = collections.Counter()
        per_thread = collections.Counter()
        elsewhere = []  # (tid, time, the library's name) of samples outside the executables
        times = []
        for line in script.splitlines():
            found = mmap.search(line)
            if found:
                start, size = int(found.group(1), 16), int(found.group(2), 16)
                if size in spans:
                    mappings.append((start, start + size, spans[size]))
                continue
            fields = line.split()
            if len(fields) < 3 or not fields[1].endswith(":") or "PERF_RECORD" in line:
                continue
            tid, time, ip = fields[0], float(fields[1][:-1]), int(fields[2], 16)
            for start, end, (first, addresses, names) in mappings:
                if start <= ip < end:
                    address = ip - start + first
                    i = bisect.bisect_right(addresses, address) - 1
                    # Code outside every named function is IREE's dispatches (unnamed).
                    inside = i >= 0 and address < names[i][0] + names[i][1]
                    by_function[names[i][2] if inside else "(IREE's dispatches)"] += 1
                    per_thread[tid] += 1
                    times.append(time)
                    break
            else:
                dso = line[line.rfind("(") + 1:line.rfind(")")] if "(" in line else "?"
                elsewhere.append((tid, time, os.path.basename(dso)))
        if not times:
            sys.exit("dispatch_profile: no samples in IREE's executables (is the cache the run's?)")
        window = max(times) - min(times)
        total = sum(by_function.values())
        print(f"samples in IREE's executables: {total} over {window:.2f} s "
              f"({min(times):.2f} to {max(times):.2f})")
        for name, n in by_function.most_common():
            print(f"  {100 * n / total:6.2f}%  {name}")
        print("each thread's share of that window in the executables, and elsewhere (top 3):")
        expected = window * args.frequency
        outside = collections.Counter(
            (tid, dso) for tid, time, dso in elsewhere if min(times) <= time <= max(times))
        for tid in sorted(set(per_thread) | {tid for tid, _ in outside}):
            other = sorted(((m, dso) for (t, dso), m in outside.items() if t == tid),
                           reverse=True)[:3]
            rest = ", ".join(f"{dso} {100 * m / expected:.1f}%" for m, dso in other)
            print(f"  thread {tid}: {100 * per_thread[tid] / expected:.1f}%; {rest}")


if __name__ == "__main__":
    main()
