#!/usr/bin/env python3
"""tools/hy4_cuda_budget.py: registers, spills and stack of every CUDA kernel, from ptxas.

  tools/hy4_cuda_budget.py [--build build/cuda] [--check] [--json FILE]

For each kernels/<op>.hip of a cuda build tree (compiled as gen/<op>.cu) the build's own
nvcc command (read from `ninja -t commands`) is run again with `-Xptxas -v` into a scratch
object, and ptxas's report per kernel is read: registers per thread, spill stores and
loads, stack frame, shared memory.  No GPU is needed (nvcc only).

--check fails (exit 1) on any kernel that spills: a spill is local memory (device memory
behind the L1) in the middle of a latency-bound chain.  The seventeenth session's first
candidate (routing's ranks before the wait) went from 77 registers to 64 with 8 bytes of
spill and was 10 % slower; this check refuses such a candidate before a device call
(ci/bench_variants.py --test runs it on every candidate).  The AMD side of the same rule
is tools/hy4_amd_budget.py (no scratch).

Exit status: 0 done (and, with --check, no spill), 1 a spill, 2 bad arguments or a build
tree this tool cannot read (the message says which), 77 no nvcc at the path the build
names (a GPU runner without the toolkit: ctest reports the test as skipped, not passed).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")


def die(msg, code=2):
    print(f"hy4_cuda_budget: {msg}", file=sys.stderr)
    sys.exit(code)


def kernel_commands(build):
    """The build's nvcc command for each gen/<op>.cu: {op: argv}."""
    if not os.path.isfile(os.path.join(build, "build.ninja")):
        die(f"{build}: no build.ninja (configure it with `cmake --preset cuda`)")
    r = subprocess.run(["ninja", "-C", build, "-t", "commands"], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"ninja -t commands failed in {build}: {r.stderr.strip()[-300:]}")
    cmds = {}
    for line in r.stdout.splitlines():
        m = re.search(r"[\s/]gen/(\w+)\.cu\s", line + " ")
        if "nvcc" not in line or not m:
            continue
        cmds.setdefault(m.group(1), shlex.split(line))
    if not cmds:
        die(f"{build}: no nvcc command compiles a gen/<op>.cu (is it a cuda build tree?)")
    return cmds


def ptxas_report(build, argv, scratch):
    """Runs argv with -Xptxas -v into scratch; returns its kernels."""
    out, skip = [], 0
    for i, a in enumerate(argv):  # drop the dependency file and the object path
        if skip:
            skip -= 1
            continue
        if a in ("-MD", "-MMD"):
            continue
        if a in ("-MT", "-MF", "-o"):
            skip = 1
            continue
        out.append(a)
    out += ["-Xptxas", "-v", "-o", os.path.join(scratch, "k.o")]
    r = subprocess.run(out, cwd=build, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"nvcc failed: {' '.join(out)[:300]}\n{r.stderr[-600:]}")
    kernels, cur = [], None
    for line in (r.stdout + r.stderr).splitlines():
        m = ENTRY.search(line)
        if m:
            cur = {"mangled": m.group(1), "arch": m.group(2), "regs": None, "spill_stores": 0, "spill_loads": 0,
                   "stack": 0, "smem": 0}
            kernels.append(cur)
            continue
        if cur is None:
            continue
        m = FRAME.search(line)
        if m:
            cur["stack"], cur["spill_stores"], cur["spill_loads"] = (int(g) for g in m.groups())
        m = USED.search(line)
        if m:
            cur["regs"] = int(m.group(1))
            s = SMEM.search(line)
            cur["smem"] = int(s.group(1)) if s else 0
    return kernels


def short_names(mangled):
    """hy4::(anonymous namespace)::topk_kernel<8>(...) -> topk_kernel<8>, for every name
    (one c++filt for all; without c++filt the mangled names stay)."""
    names = list(mangled)
    if shutil.which("c++filt"):
        out = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True, text=True).stdout
        if len(out.splitlines()) == len(names):
            names = out.splitlines()
    return [re.sub(r"^.*::", "", n.replace("(anonymous namespace)::", "").split("(", 1)[0].split(" ", 1)[-1])
            for n in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build/cuda", help="a cuda build tree (cmake --preset cuda)")
    ap.add_argument("--check", action="store_true", help="exit 1 if any kernel spills")
    ap.add_argument("--json", help="write the table as JSON")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cmds = kernel_commands(build)
    nvcc = next(iter(cmds.values()))[0]
    if not (shutil.which(nvcc) or os.access(nvcc, os.X_OK)):
        print(f"hy4_cuda_budget: SKIPPED: {nvcc} (the build's nvcc) is not on this machine")
        sys.exit(77)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for op in sorted(cmds):
            for k in ptxas_report(build, cmds[op], scratch):
                k["op"] = op
                rows.append(k)
    for k, name in zip(rows, short_names(k["mangled"] for k in rows)):
        k["kernel"] = name
    if not rows:
        die("ptxas reported no kernel (did nvcc's flags change?)")
    print(f"{'kernel':34s} {'arch':6s} {'regs':>5s} {'spill st':>9s} {'spill ld':>9s} {'stack':>6s} {'smem':>7s}")
    bad = []
    for k in rows:
        flag = ""
        if k["spill_stores"] or k["spill_loads"]:
            flag = "  SPILLS"
            bad.append(k)
        print(f"{k['kernel']:34s} {k['arch']:6s} {k['regs'] if k['regs'] is not None else '?':>5} "
              f"{k['spill_stores']:>9d} {k['spill_loads']:>9d} {k['stack']:>6d} {k['smem']:>7d}{flag}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if a.check and bad:
        for k in bad:
            print(f"hy4_cuda_budget: {k['kernel']} ({k['op']}.hip, {k['arch']}) spills {k['spill_stores']} bytes "
                  f"stored / {k['spill_loads']} loaded at {k['regs']} registers")
        print(f"hy4_cuda_budget: {len(rows)} kernels: FAIL")
        sys.exit(1)
    print(f"hy4_cuda_budget: {len(rows)} kernels: {'PASS' if a.check else 'listed'}")


if __name__ == "__main__":
    main()
