#!/usr/bin/env python3
"""Writes a CTest resource spec file for the GPUs of this machine.

    ci/resource_spec.py [-o FILE] [--fake N] [--per-target] [--slots S]

NVIDIA: one "gpus" entry per device (nvidia-smi index).  AMD: one per GPU agent in
rocminfo order (the HIP device index); with --per-target the type is the gfx target
("gfx942", "gfx950") instead of "gpus", for suites configured with
-DHY4_GPU_RESOURCE=<target>.  --fake N: N fake slots (the CPU self-test).
Then:  ctest --test-dir build/cuda --resource-spec-file FILE -j <GPUs>
Prints the GPUs it found on stderr; exits 1 when there are none (and no --fake)."""
import argparse, json, shutil, subprocess, sys


def nvidia():
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout
    except (subprocess.CalledProcessError, OSError):
        return []
    return [("gpus", line.split(",")[0].strip(), line.split(",", 1)[1].strip())
            for line in out.splitlines() if line.strip()]


def amd():
    if not shutil.which("rocminfo"):
        return []
    try:
        out = subprocess.run(["rocminfo"], capture_output=True, text=True, check=True).stdout
    except (subprocess.CalledProcessError, OSError):
        return []
    gpus, name = [], None
    for line in out.splitlines():
        s = line.strip()
        if s.startswith("Name:"):
            name = s.split(":", 1)[1].strip()
        if s.startswith("Device Type:") and "GPU" in s and name and name.startswith("gfx"):
            gpus.append((name, str(len(gpus)), name))
    return gpus


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--fake", type=int, default=0)
    ap.add_argument("--per-target", action="store_true")
    ap.add_argument("--slots", type=int, default=1, help="tests that may share one GPU at once")
    a = ap.parse_args()
    if a.fake:
        found = [("gpus", str(i), "fake slot") for i in range(a.fake)]
    else:
        found = nvidia() or [(t if a.per_target else "gpus", i, n) for t, i, n in amd()]
    if not found:
        print("resource_spec.py: no GPU found (nvidia-smi / rocminfo)", file=sys.stderr)
        return 1
    types = {}
    for t, i, n in found:
        types.setdefault(t, []).append({"id": i, "slots": a.slots})
        print(f"resource_spec.py: {t} id {i}: {n}", file=sys.stderr)
    spec = {"version": {"major": 1, "minor": 0}, "local": [types]}
    text = json.dumps(spec, indent=2) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        open(a.output, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
