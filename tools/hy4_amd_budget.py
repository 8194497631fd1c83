#!/usr/bin/env python3
"""tools/hy4_amd_budget.py: the AMD register / LDS / scratch / occupancy budget of every
kernel, read from the compiled code objects of a rocm build tree.

  tools/hy4_amd_budget.py [--build build/rocm] [--check] [--json FILE]

For each kernels/<op>.hip object of the build (CMakeFiles/hy4_kernels.dir/gen/<op>.hip.cpp.o)
the .hip_fatbin section is dumped (llvm-objcopy), each gfx target's code object
unbundled (clang-offload-bundler) and its AMDGPU metadata read (llvm-readobj --notes):
VGPRs, AGPRs, SGPRs, LDS (group segment), scratch (private segment), spills, wave size
and the largest workgroup.  The occupancy those allow is computed per SIMD (no GPU is
needed, none was available to this project):

  gfx942 (MI300X, CDNA3) and gfx950 (MI350X / MI355X, CDNA4): 4 SIMDs per CU, at most
  8 waves per SIMD, 512 VGPRs per lane per SIMD shared by VGPRs and AGPRs (granule 8),
  800 SGPRs per SIMD (granule 16), LDS 64 KiB per CU on gfx942 and 160 KiB on gfx950
  (AMD CDNA3 ISA reference guide; AMD Instinct MI300 / MI350 series documentation).

  waves/SIMD = min(8, 512 // granule8(vgpr + agpr), 800 // granule16(sgpr),
                   workgroups per CU by LDS x waves per workgroup / 4)

--check fails (exit 1) on any scratch or spill, and on a kernel whose occupancy is
below what its design needs: each kernels/<op>.hip states it in a line
    // AMD budget: <kernel name> >= N waves/SIMD
(every instance of a template kernel is held to its line; a kernel without a line
fails the check, so a new kernel must state its need).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# clang-offload-bundler runs `llvm-objcopy` by its plain name; Debian's llvm-22 puts the
# plain names in /usr/lib/llvm-22/bin only (a fresh Debian 12 root found none in PATH).
if os.path.isdir("/usr/lib/llvm-22/bin"):
    os.environ["PATH"] = "/usr/lib/llvm-22/bin" + os.pathsep + os.environ.get("PATH", "")
ARCH = {
    "gfx942": {"lds": 64 * 1024, "simd_waves": 8, "vgprs": 512, "sgprs": 800, "simds": 4},
    "gfx950": {"lds": 160 * 1024, "simd_waves": 8, "vgprs": 512, "sgprs": 800, "simds": 4},
}


def tool(name):
    for c in (f"{name}-22", name, f"/usr/lib/llvm-22/bin/{name}"):
        p = shutil.which(c)
        if p:
            return p
    sys.exit(f"hy4_amd_budget: {name} not found (apt install llvm-22 clang-tools-22)")


def up(x, g):
    return (x + g - 1) // g * g


def occupancy(k, arch):
    a = ARCH[arch]
    v = up(max(1, k["vgpr"]), 8) + up(k["agpr"], 8)
    by_vgpr = a["vgprs"] // v
    by_sgpr = a["sgprs"] // up(max(1, k["sgpr"]), 16)
    waves_per_wg = max(1, -(-k["max_workgroup"] // k["wave"]))
    if k["lds"] > 0:
        wg_per_cu = a["lds"] // k["lds"]
        by_lds = wg_per_cu * waves_per_wg // a["simds"]
    else:
        by_lds = a["simd_waves"]
    w = min(a["simd_waves"], by_vgpr, by_sgpr, by_lds)
    limiter = min((("waves", a["simd_waves"]), ("vgpr", by_vgpr), ("sgpr", by_sgpr), ("lds", by_lds)),
                  key=lambda t: t[1])[0]
    return w, limiter


def demangle(names):
    p = subprocess.run([tool("llvm-cxxfilt")], input="\n".join(names), stdout=subprocess.PIPE, text=True)
    return p.stdout.splitlines()


def short(demangled):
    # "void hy4::(anonymous namespace)::topk_kernel<16>(float const*, ...)" -> "topk_kernel<16>"
    m = re.search(r"::(\w+)(<[^()]*>)?\(", demangled)
    return (m.group(1) + (m.group(2) or "")) if m else demangled


def kernels_of(obj, work):
    import yaml

    fat = os.path.join(work, os.path.basename(obj) + ".fatbin")
    subprocess.run([tool("llvm-objcopy"), f"--dump-section=.hip_fatbin={fat}", obj, os.path.join(work, "dummy.o")],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    targets = subprocess.run([tool("clang-offload-bundler"), "--list", "--type=o", f"--input={fat}"],
                             stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    out = []
    for t in targets:
        m = re.search(r"--(gfx\w+)$", t)
        if not m:
            continue
        arch = m.group(1)
        co = fat + "." + arch + ".co"
        subprocess.run([tool("clang-offload-bundler"), "--unbundle", "--type=o", f"--input={fat}", f"--targets={t}",
                        f"--output={co}"], check=True)
        notes = subprocess.run([tool("llvm-readobj"), "--notes", co], stdout=subprocess.PIPE, text=True, check=True).stdout
        doc = notes[notes.index("---"):]
        doc = doc[: doc.index("\n...") + 4] if "\n..." in doc else doc
        meta = yaml.safe_load(doc)
        for k in meta.get("amdhsa.kernels", []):
            out.append({"arch": arch, "symbol": k[".name"], "vgpr": k.get(".vgpr_count", 0),
                        "agpr": k.get(".agpr_count", 0), "sgpr": k.get(".sgpr_count", 0),
                        "lds": k.get(".group_segment_fixed_size", 0), "scratch": k.get(".private_segment_fixed_size", 0),
                        "vgpr_spill": k.get(".vgpr_spill_count", 0), "sgpr_spill": k.get(".sgpr_spill_count", 0),
                        "wave": k.get(".wavefront_size", 64), "max_workgroup": k.get(".max_flat_workgroup_size", 1024)})
    return out


def design_needs():
    needs = {}
    for f in glob.glob(os.path.join(ROOT, "kernels", "*.hip")):
        for m in re.finditer(r"//\s*AMD budget:\s*(\w+)\s*>=\s*(\d+)\s*waves/SIMD", open(f).read()):
            needs[m.group(1)] = (int(m.group(2)), os.path.relpath(f, ROOT))
    return needs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "rocm"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    objs = sorted(glob.glob(os.path.join(args.build, "CMakeFiles", "hy4_kernels.dir", "gen", "*.hip.cpp.o")))
    if not objs:
        print(f"hy4_amd_budget: no HIP kernel objects under {args.build} (cmake --preset rocm && cmake --build build/rocm)")
        return 2
    needs = design_needs()
    rows, problems = [], []
    with tempfile.TemporaryDirectory() as work:
        for o in objs:
            ks = kernels_of(o, work)
            for k, d in zip(ks, demangle([k["symbol"] for k in ks])):
                k["kernel"] = short(d)
                k["op"] = os.path.basename(o).split(".")[0]
                k["waves_per_simd"], k["limiter"] = occupancy(k, k["arch"])
                base = k["kernel"].split("<")[0]
                k["needs"] = needs.get(base, (None, None))[0]
                rows.append(k)
                # SGPR spills go to VGPR lanes (v_writelane), not memory: reported, allowed.
                if k["scratch"] > 0 or k["vgpr_spill"] > 0:
                    problems.append(f"{k['kernel']} {k['arch']}: scratch {k['scratch']} B, {k['vgpr_spill']} VGPR spills")
                if k["needs"] is None:
                    problems.append(f"{k['kernel']} {k['arch']}: no '// AMD budget: {base} >= N waves/SIMD' line in kernels/")
                elif k["waves_per_simd"] < k["needs"]:
                    problems.append(f"{k['kernel']} {k['arch']}: {k['waves_per_simd']} waves/SIMD ({k['limiter']}-bound), "
                                    f"its design needs >= {k['needs']} ({needs[base][1]})")
    print(f"{'kernel':34s} {'arch':7s} {'vgpr':>4s} {'agpr':>4s} {'sgpr':>4s} {'lds B':>6s} {'scratch':>7s} {'wg':>5s} "
          f"{'waves/SIMD':>10s} {'bound':>6s} {'needs':>5s} {'sgpr spill':>10s}")
    for k in sorted(rows, key=lambda r: (r["op"], r["kernel"], r["arch"])):
        print(f"{k['kernel']:34s} {k['arch']:7s} {k['vgpr']:4d} {k['agpr']:4d} {k['sgpr']:4d} {k['lds']:6d} {k['scratch']:7d} "
              f"{k['max_workgroup']:5d} {k['waves_per_simd']:10d} {k['limiter']:>6s} {str(k['needs'] or '-'):>5s} {k['sgpr_spill']:10d}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    for p in problems:
        print("hy4_amd_budget: " + p)
    if args.check:
        print(f"hy4_amd_budget: {len(rows)} kernel instances: {'FAIL' if problems else 'PASS'}")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
