#!/usr/bin/env python3
"""bench_variants.py: one-change hy4-bench variants, built here, timed side by side on a GPU.

A performance claim about a kernel is a comparison: the tree against the same tree with one
change.  ci/variants.txt lists the changes.  Two kinds:

  probe      drops a stage of a kernel (the sigmoid, the scale, the ranking): its results
             are wrong, it is never kept; its time bounds what any version of the op can
             take with that stage (issue 11: "show the measurement that proves it").
  candidate  an idea to make the op faster with the same bits; it must pass the op's
             tests (--test) before its time means anything.

Build here (no GPU needed; nvcc from the cuda preset), in a scratch copy of the tree
(--work, default /tmp/hy4-variants; your tree is never edited):

    python3 ci/bench_variants.py --build out/v [--only NAME[,NAME]] [--test]

writes out/v/hy4-bench-base (the tree as it is) and out/v/hy4-bench-<variant> (static
cudart: each runs on a machine with only a driver) and out/v/variants.json (what each
binary is; an --only run adds to the binaries built from the same tree, and removes those
of another tree).  --test also builds the cpu preset in the scratch copy and runs each variant's
ops' ctest labels (warp 32 and 64), then builds the rocm preset and checks the AMD budget
(tools/hy4_amd_budget.py --check: no scratch, each kernel's stated occupancy): a candidate
that fails either is not built for the GPU; a probe is expected to fail and is not tested.
A candidate's CUDA build is then held to tools/hy4_cuda_budget.py --check (no kernel
spills); one that spills is listed as not built (CUDA-SPILLS).

Run on the GPU machine (one device call, the folder carried):

    python3 ci/bench_variants.py --run out/v [--rounds 2] [--launches 100] [--replays 10]

(or --run out/v.tar.xz, written by --build --pack: the binaries are near-identical, ~2.5 MB
each and ~0.15 MB each packed, and a device call carries 64 MiB in all) runs base and every
variant's binary in turn, --rounds times interleaved (base, v1, v2, ...,
base, v1, ...), each with --ops of that variant, and prints per op a table of median us per
launch (the median over rounds; the spread of the rounds beside it when it passes 0.05 us)
for every T, base first, and the ratio to base at each T.  --json FILE keeps it.

A git branch (or any commit) can be built the same way, as a candidate beside base:

    python3 ci/bench_variants.py --build out/v --branch cand-x[,cand-y] [--test] [--pack]

REF's own change (the files it changed since it left HEAD's history, in REF's versions) is
written into the scratch copy over HEAD, built (and, with --test, held to the same gates),
then put back; a file that HEAD changed too is refused (rebase REF first).  The binary is
hy4-bench-branch.<ref> (the name lowered, other characters '-'); its ops are those whose
kernels/<op>.* files the branch changes (all four if none).  With --branch and no --only,
no list variant is built.

    python3 ci/bench_variants.py --check | --list

--check parses the list and checks that every edit still applies to the tree (its text
occurs once, or the 'at'-th time); the ctest ci.variants runs it.  Exit status: 0 done, 1 a
candidate failed its tests, a build failed or a binary failed to run, 2 bad arguments or a
bad list (the message names its line).

List format (ci/variants.txt; blocks separated by blank lines, # comments):

    variant <op>.<what>      name, unique ([a-z0-9.-])
    kind probe|candidate
    ops <op>[,<op>]          what hy4-bench times for it (gate | sink | topk | routing)
    why <text>               one line: what the time would show
    file <path>              an edit: relative to the repository root ...
    old <text>               ... text that must occur exactly once (\\n for a newline) ...
    new <text>               ... its replacement ...
    at <n>                   ... optional: old occurs several times, replace the n-th
    (file / old / new / at again: a second edit of the same variant, applied in order)
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plant_campaign  # noqa: E402  (sync_tree, apply, select: the same scratch-copy mechanics)

ROOT = plant_campaign.ROOT
OPS = ("gate", "sink", "topk", "routing")
KINDS = ("probe", "candidate")
HEAD_KEYS = ("variant", "kind", "ops", "why")
EDIT_KEYS = ("file", "old", "new", "at")


def fail(msg):
    print(f"bench_variants: {msg}", file=sys.stderr)
    sys.exit(2)


def parse(path):
    variants, names = [], set()
    cur = None

    def close():
        nonlocal cur
        if cur is None:
            return
        where = f"{path}:{cur['_line']}"
        for k in ("variant", "kind", "ops"):
            if k not in cur:
                fail(f"{where}: variant block lacks '{k}'")
        if not cur["edits"]:
            fail(f"{where}: variant {cur['variant']} has no edit (file / old / new)")
        for e in cur["edits"]:
            missing = [k for k in ("file", "old", "new") if k not in e]
            if missing:
                fail(f"{path}:{e['_line']}: edit of {cur['variant']} lacks {', '.join(missing)}")
        if cur["variant"] in names:
            fail(f"{where}: variant name {cur['variant']!r} repeats")
        names.add(cur["variant"])
        variants.append(cur)
        cur = None

    for lineno, key, value in plant_campaign.block_lines(path, HEAD_KEYS + EDIT_KEYS, fail):
        if key is None:
            close()
            continue
        if cur is None:
            if key != "variant":
                fail(f"{path}:{lineno}: a block starts with 'variant', not {key!r}")
            cur = {"_line": lineno, "edits": []}
        if key in HEAD_KEYS:
            if key in cur:
                fail(f"{path}:{lineno}: {key!r} given twice in one variant block")
            if cur["edits"]:
                fail(f"{path}:{lineno}: {key!r} after the first edit (the head keys come first)")
            v = value.strip()
            if key == "variant" and not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", v):
                fail(f"{path}:{lineno}: variant name {v!r}: use [a-z0-9.-] (it names a file)")
            if key == "kind" and v not in KINDS:
                fail(f"{path}:{lineno}: kind {v!r}: must be probe or candidate")
            if key == "ops":
                bad = [o for o in v.split(",") if o not in OPS]
                if bad or not v:
                    fail(f"{path}:{lineno}: ops {v!r}: each must be one of {', '.join(OPS)}")
            cur[key] = v
            continue
        if key == "file":
            cur["edits"].append({"_line": lineno, "file": value.strip()})
            continue
        if not cur["edits"]:
            fail(f"{path}:{lineno}: {key!r} before the edit's 'file'")
        e = cur["edits"][-1]
        if key in e:
            fail(f"{path}:{lineno}: {key!r} given twice in one edit (start the next edit with 'file')")
        e[key] = value.replace("\\n", "\n") if key in ("old", "new") else value.strip()
        if key == "at" and not (e[key].isdigit() and int(e[key]) >= 1):
            fail(f"{path}:{lineno}: 'at' must be a positive number, not {e[key]!r}")
    return variants


def check_applies(variants, list_path):
    """Every edit applies to the tree as it is now, in order (an edit may see the one before)."""
    for v in variants:
        texts = {}
        for e in v["edits"]:
            path = os.path.join(ROOT, e["file"])
            if not os.path.isfile(path):
                fail(f"{list_path}:{e['_line']}: variant {v['variant']}: file {e['file']} does not exist")
            text = texts.get(e["file"]) or open(path).read()
            n = text.count(e["old"])
            at = int(e.get("at", "0"))
            if (at == 0 and n != 1) or at > n:
                want = "once (or name the occurrence with 'at')" if at == 0 else f"at least {at} times"
                fail(f"{list_path}:{e['_line']}: variant {v['variant']}: its 'old' text occurs {n} times in "
                     f"{e['file']} (must be {want})")
            texts[e["file"]] = plant_campaign.apply(text, e)


def branch_variant(ref):
    """A candidate of git REF's own change over HEAD: {variant, kind, ops, why, edits: [], branch: [(status, path)], sha}."""
    sha = run(["git", "rev-parse", "--verify", "--quiet", ref + "^{commit}"], cwd=ROOT).stdout.strip()
    if not sha:
        fail(f"--branch {ref}: not a branch or commit of this repository")
    # the branch's own change (since it left HEAD's history) on top of HEAD
    base = run(["git", "merge-base", "HEAD", sha], cwd=ROOT).stdout.strip()
    diff = run(["git", "diff", "--no-renames", "--name-status", base, sha], cwd=ROOT)
    if not base or diff.returncode != 0:
        fail(f"--branch {ref}: no common history with HEAD ({diff.stderr.strip()})")
    changed = [tuple(l.split("\t", 1)) for l in diff.stdout.splitlines() if "\t" in l]
    if not changed:
        fail(f"--branch {ref}: it changes nothing that HEAD lacks (nothing to compare)")
    both = run(["git", "diff", "--no-renames", "--name-only", base, "HEAD", "--"] + [p for _, p in changed],
               cwd=ROOT).stdout.split()
    if both:
        fail(f"--branch {ref}: HEAD changed {', '.join(both)} since the branch left it: rebase {ref} on HEAD first")
    ops = [o for o in OPS if any(re.fullmatch(rf"kernels/{o}(\.hip|\.h|_plan\.cpp)", path) for _, path in changed)]
    subject = run(["git", "log", "-1", "--format=%s", sha], cwd=ROOT).stdout.strip()
    name = "branch." + re.sub(r"[^a-z0-9.-]", "-", ref.lower())
    return {"variant": name, "kind": "candidate", "ops": ",".join(ops or OPS),
            "why": f"git {ref} at {sha[:7]}, {len(changed)} files on top of HEAD: {subject}"[:300], "edits": [],
            "branch": changed, "sha": sha}


def edited(work, v):
    """Applies v's edits (or writes its branch's files) in the scratch copy; returns {path:
    original bytes, or None where the file did not exist} to put back."""
    originals = {}
    for status, rel in v.get("branch", []):
        path = os.path.join(work, rel)
        originals.setdefault(path, open(path, "rb").read() if os.path.isfile(path) else None)
        if status.startswith("D"):
            if os.path.isfile(path):
                os.remove(path)
            continue
        blob = subprocess.run(["git", "show", f"{v['sha']}:{rel}"], cwd=ROOT, capture_output=True)
        if blob.returncode != 0:
            restore(originals)
            fail(f"--branch: git show {v['sha'][:7]}:{rel} failed")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "wb").write(blob.stdout)
    for e in v["edits"]:
        path = os.path.join(work, e["file"])
        text = open(path).read()
        originals.setdefault(path, text.encode())
        open(path, "w").write(plant_campaign.apply(text, e))
    return originals


def restore(originals):
    for path, data in originals.items():
        if data is None:
            if os.path.isfile(path):
                os.remove(path)
        else:
            open(path, "wb").write(data)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def budget_says(r, tool):
    """The lines a budget tool (tools/<tool>.py) printed under its own name, for a verdict."""
    return "; ".join(l for l in (r.stdout + r.stderr).splitlines() if l.startswith(tool + ":"))[-600:]


def ensure_preset(work, preset):
    build = os.path.join(work, "build", preset)
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        print(f"bench_variants: configuring the {preset} preset in {work}", flush=True)
        c = run(["cmake", "--preset", preset], cwd=work)
        if c.returncode != 0:
            fail(f"cmake --preset {preset} failed in the scratch copy:\n" + (c.stdout + c.stderr)[-1500:])
    return build


def build_all(a, variants):
    out = os.path.abspath(a.build)
    work = os.path.abspath(a.work)
    if work == ROOT or ROOT.startswith(work + os.sep):
        fail(f"--work {a.work}: must not be the repository or a folder above it")
    os.makedirs(out, exist_ok=True)
    plant_campaign.sync_tree(work)
    cuda = ensure_preset(work, "cuda")
    cpu = ensure_preset(work, "cpu") if a.test else None
    rocm = ensure_preset(work, "rocm") if a.test else None
    head = run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT).stdout.strip()
    diff = run(["git", "diff", "HEAD"], cwd=ROOT).stdout
    base_of = head + (f"+uncommitted-{hashlib.sha1(diff.encode()).hexdigest()[:8]}" if diff else "")
    status, made = 0, {"base": {"kind": "base", "ops": ",".join(OPS), "why": "the tree as it is", "tree": base_of}}

    def build_bench(name):
        b = run(["cmake", "--build", cuda, "-j2", "--target", "hy4-bench"])
        if b.returncode != 0:
            return (b.stdout + b.stderr)[-1200:]
        shutil.copy2(os.path.join(cuda, "bench", "hy4-bench"), os.path.join(out, f"hy4-bench-{name}"))
        return None

    t0 = time.time()
    err = build_bench("base")
    if err:
        fail("the tree's own hy4-bench does not build in the scratch copy:\n" + err)
    print(f"built    {'base':44s} {time.time() - t0:5.0f} s  ({base_of})", flush=True)
    for v in variants:
        originals = edited(work, v)
        t0 = time.time()
        try:
            verdict = ""
            if a.test and v["kind"] == "candidate":
                b = run(["cmake", "--build", cpu, "-j2"])
                if b.returncode != 0:
                    verdict = "BUILD-FAILED (cpu): " + (b.stdout + b.stderr)[-600:]
                else:
                    labels = "|".join(f"^{o}$" for o in v["ops"].split(","))
                    r = run(["ctest", "--test-dir", cpu, "-j2", "-L", labels, "--timeout", "900"])
                    tail = r.stdout.split("The following tests FAILED:", 1)
                    failed = [l.strip() for l in tail[1].splitlines() if re.match(r"\s+\d+ - ", l)] if len(tail) > 1 else []
                    if failed or r.returncode != 0:
                        verdict = "TESTS-FAILED: " + ("; ".join(failed[:6]) or r.stdout[-400:])
                if not verdict:
                    # the AMD register / LDS / occupancy budget of every kernel (a candidate
                    # that costs gfx942 a wave per SIMD below a kernel's stated need is not kept)
                    b = run(["cmake", "--build", rocm, "-j2"])
                    budget = os.path.join(work, "tools", "hy4_amd_budget.py")
                    r = b if b.returncode != 0 else run([sys.executable, budget, "--build", rocm, "--check"])
                    if r.returncode != 0:
                        verdict = "AMD-BUDGET-FAILED: " + budget_says(r, "hy4_amd_budget")
            if not verdict:
                err = build_bench(v["variant"])
                verdict = f"BUILD-FAILED (cuda): {err}" if err else ""
            if not verdict and a.test and v["kind"] == "candidate":
                # no CUDA kernel may spill (a candidate that loses registers to a spill is
                # slower where the chain is latency-bound: the seventeenth session's first)
                budget = os.path.join(work, "tools", "hy4_cuda_budget.py")
                r = run([sys.executable, budget, "--build", cuda, "--check"])
                if r.returncode != 0:  # 1: a spill; 2 or 77: the check could not run (said why)
                    verdict = ("CUDA-SPILLS: " if r.returncode == 1 else "CUDA-BUDGET-NOT-RUN: ") + budget_says(
                        r, "hy4_cuda_budget")
            if verdict:
                status = 1
                print(f"{'not built':8s} {v['variant']:44s} {time.time() - t0:5.0f} s  {verdict}", flush=True)
                continue
            tested = " tests pass" if a.test and v["kind"] == "candidate" else ""
            print(f"built    {v['variant']:44s} {time.time() - t0:5.0f} s  {v['kind']}{tested}", flush=True)
            made[v["variant"]] = {"kind": v["kind"], "ops": v["ops"], "why": v.get("why", ""), "tree": base_of,
                                  "tested": bool(tested)}
            if "sha" in v:
                made[v["variant"]]["branch"] = v["sha"]
        finally:
            restore(originals)
    # rebuild the untouched tree last, so the scratch copy's objects match it for the next run
    run(["cmake", "--build", cuda, "-j2", "--target", "hy4-bench"])
    # Variants built earlier from the same tree (an --only run adds to them); binaries of
    # another tree are removed, so one folder never mixes trees.
    index = os.path.join(out, "variants.json")
    try:
        old = json.load(open(index))
    except (OSError, ValueError):
        old = {}
    for name, info in old.items():
        exe = os.path.join(out, f"hy4-bench-{name}")
        if name in made:
            continue
        if info.get("tree") == base_of and os.path.isfile(exe):
            made[name] = info
        elif os.path.isfile(exe):
            os.remove(exe)
    with open(index, "w") as f:
        json.dump(made, f, indent=1)
    print(f"bench_variants: {len(made)} binaries in {out} (variants.json says what each is)")
    if a.pack:
        # near-identical binaries: ~2.5 MB each, ~0.15 MB each packed (a device call carries
        # 64 MiB in all, build/cuda included)
        with tarfile.open(out + ".tar.xz", "w:xz") as tf:
            tf.add(out, arcname=os.path.basename(out))
        print(f"bench_variants: packed into {out}.tar.xz ({os.path.getsize(out + '.tar.xz') / 1e6:.1f} MB): "
              f"carry it and run --run {os.path.relpath(out, ROOT)}.tar.xz")
    return status


def run_all(a):
    folder = os.path.abspath(a.run)
    if folder.endswith(".tar.xz") and os.path.isfile(folder):  # made by --build --pack
        unpack = tempfile.mkdtemp(prefix="hy4-variants-")
        with tarfile.open(folder, "r:xz") as tf:
            names = tf.getnames()
            top = {n.split("/")[0] for n in names}
            if len(top) != 1 or any(n.startswith("/") or ".." in n.split("/") for n in names):
                fail(f"--run {a.run}: not an archive made by --build --pack (one folder, relative paths)")
            tf.extractall(unpack)
        folder = os.path.join(unpack, top.pop())
    try:
        made = json.load(open(os.path.join(folder, "variants.json")))
    except (OSError, ValueError) as e:
        fail(f"--run {a.run}: no readable variants.json there ({e}); make the folder with --build")
    names = ["base"] + [n for n in made if n != "base"]
    if a.only:
        want = set(a.only.split(","))
        unknown = want - set(made)
        if unknown:
            fail(f"--only names no binary in {a.run}: {', '.join(sorted(unknown))}")
        names = ["base"] + [n for n in names if n in want and n != "base"]
    want_ops = a.ops.split(",") if a.ops else list(OPS)
    ops_of = {n: ",".join(o for o in made[n]["ops"].split(",") if o in want_ops) for n in names}
    names = ["base"] + [n for n in names if n != "base" and ops_of[n]]
    # base times every op a variant times (all of them with no variant left)
    ops_of["base"] = ",".join(o for o in OPS if o in want_ops and (len(names) == 1 or any(
        o in ops_of[n].split(",") for n in names[1:])))
    scratch = tempfile.mkdtemp(prefix="hy4-variant-rounds-")  # the binaries' own JSON rows
    times = {}  # (name, op, T) -> [us per round]
    copy = []
    status = 0
    for rnd in range(a.rounds):
        for n in names:
            exe = os.path.join(folder, f"hy4-bench-{n}")
            jpath = os.path.join(scratch, f"round{rnd}-{n}.json")
            cmd = [exe, "--ops", ops_of[n], "--launches", str(a.launches), "--replays", str(a.replays),
                   "--json", jpath]
            if a.tokens:
                cmd += ["--tokens", a.tokens]
            r = run(cmd)
            if r.returncode == 3:  # hy4-bench: no device of its backend; every binary would say the same
                print(f"bench_variants: no GPU: {n} says {(r.stdout + r.stderr).strip()[-300:]}")
                return 1
            if r.returncode != 0:
                print(f"bench_variants: {n} (round {rnd + 1}) exited {r.returncode}:\n{(r.stdout + r.stderr)[-800:]}")
                status = 1
                continue
            res = json.load(open(jpath))
            copy.append(res["copy_gbs"])
            for row in res["rows"]:
                if row["T"] >= 0:
                    times.setdefault((n, row["op"], row["T"]), []).append(row["median_us"])
    report = {"rounds": a.rounds, "launches": a.launches, "replays": a.replays, "copy_gbs": copy,
              "binaries": {n: made[n] for n in names}, "ops": {}}
    print(f"\nbench_variants: median us per launch (graph of {a.launches} launches x {a.replays} replays), median of "
          f"{a.rounds} interleaved rounds; copy bandwidth {min(copy, default=0):.0f} - {max(copy, default=0):.0f} GB/s")
    for op in OPS:
        rows = [n for n in names if op in ops_of[n].split(",")]
        Ts = sorted({T for (n, o, T) in times if o == op})
        if not rows or not Ts:
            continue
        print(f"\n  {op + ':':40s} " + "  ".join(f"{'T=' + str(T):>18s}" for T in Ts))
        report["ops"][op] = {}
        for n in rows:
            cells, rec = [], {}
            for T in Ts:
                v = times.get((n, op, T))
                if not v:
                    cells.append(f"{'-':>18s}")
                    continue
                med = statistics.median(v)
                spread = max(v) - min(v)
                base = times.get(("base", op, T))
                ratio = f" x{med / statistics.median(base):.2f}" if base and n != "base" else ""
                s = f"{med:.2f}" + (f"~{spread:.2f}" if spread > 0.05 else "") + ratio
                cells.append(f"{s:>18s}")
                rec[T] = {"median_us": med, "rounds": v}
            kind = made[n]["kind"] + (", tests passed" if made[n].get("tested") else
                                      ", UNTESTED" if made[n]["kind"] == "candidate" else "")
            print(f"  {n[:40]:40s} " + "  ".join(cells) + f"   [{kind}]")
            report["ops"][op][n] = rec
    print("\n(probe: results wrong on purpose, a bound; candidate: meant to keep the bits (tests passed: built"
          " with --test); a~b: median a, rounds spread b; xR: time / base's time at that T)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return status


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list-file", default=os.path.join(ROOT, "ci", "variants.txt"), help="the variant list")
    ap.add_argument("--only", default="", help="comma-separated variant names")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true", help="parse the list, check every edit applies")
    g.add_argument("--list", action="store_true", help="print the variants")
    g.add_argument("--build", metavar="OUT", help="build base and variant hy4-bench binaries into OUT")
    g.add_argument("--run", metavar="DIR", help="time the binaries of DIR (on the GPU machine)")
    ap.add_argument("--work", default="/tmp/hy4-variants", help="scratch copy of the tree for --build")
    ap.add_argument("--test", action="store_true",
                    help="--build: run each candidate's ops' tests on the cpu preset and check the AMD budget (rocm preset)")
    ap.add_argument("--pack", action="store_true", help="--build: also write OUT.tar.xz (what a device call carries)")
    ap.add_argument("--branch", default="", help="--build: comma-separated git branches / commits, each built as a candidate")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--launches", type=int, default=100)
    ap.add_argument("--replays", type=int, default=10)
    ap.add_argument("--ops", default="", help="--run: only these ops")
    ap.add_argument("--tokens", default="", help="--run: only these T (hy4-bench --tokens)")
    ap.add_argument("--json", default="", help="--run: write the table as JSON here")
    a = ap.parse_args()
    if a.run:
        if a.rounds < 1 or a.launches < 1 or a.replays < 1:
            fail("--rounds, --launches and --replays must be >= 1")
        if a.ops and any(o not in OPS for o in a.ops.split(",")):
            fail(f"--ops {a.ops!r}: each must be one of {', '.join(OPS)}")
        return run_all(a)
    if a.branch and not a.build:
        fail("--branch goes with --build")
    variants = parse(a.list_file)
    variants, unknown = plant_campaign.select(variants, "variant", a.only)
    if unknown:
        fail(f"--only names no variant: {', '.join(sorted(unknown))}")
    if a.branch and not a.only:
        variants = []
    if a.list:
        for v in variants:
            print(f"{v['variant']:44s} {v['kind']:9s} {v['ops']:12s} {v.get('why', '')}")
        return 0
    check_applies(variants, a.list_file)
    if a.check:
        print(f"bench_variants: {len(variants)} variants apply")
        return 0
    branches = [branch_variant(ref) for ref in a.branch.split(",") if ref]
    names = [v["variant"] for v in variants + branches]
    if len(set(names)) != len(names):
        fail(f"--branch {a.branch}: two variants would share a name ({', '.join(names)})")
    return build_all(a, variants + branches)


if __name__ == "__main__":
    sys.exit(main())
