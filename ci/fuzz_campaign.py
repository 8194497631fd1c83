#!/usr/bin/env python3
"""ci/fuzz_campaign.py: the nightly fuzz campaign (ci/fuzz_campaign.sh runs it).

  ci/fuzz_campaign.sh [-t SECONDS] [-j JOBS] [-o OUT] [-c CORPUS] [-b CPU_BUILD]
                      [-g GPU_BUILD] [--stream N] [fuzzer ...]
  ci/fuzz_campaign.sh -g GPU_BUILD --replay-only FINDINGS [--stream N] [-o OUT]
                      (a GPU runner: no fuzzing; FINDINGS = an earlier campaign's
                      OUT/findings, e.g. the CPU night's, replayed with the regression cases)

Every fuzzer (default: all of build/cpu/fuzz: one per op, graph, case_file) runs in
libFuzzer fork mode with JOBS jobs for its share of SECONDS (the whole campaign's
fuzzing time, split evenly), its corpus kept in CORPUS/<fuzzer> (default
OUT/corpus; point -c at a folder that survives the night) and merged (-merge=1) at the
end.  Then every crash, timeout, out-of-memory or mismatch artifact is grouped by its
one-line description, the smallest of each group minimised (-minimize_crash=1), and
turned into a case file under OUT/findings/ (op, shape, seed, `text description`),
which the cpu build's hy4-repro replays and must fail on.  With -g, every finding and
every regression case is replayed on the GPU build's hy4-repro (eager and graph,
--require-gpu), and --stream N generated cases per seed and op are run there (hy4-conformance
--cases-per-seed N), the real kernels, with no coverage guidance.

Writes OUT/summary.json (per fuzzer: execs, exec/s, coverage features over time, corpus
size before / after, findings) and OUT/coverage.svg (features over time, one panel per
fuzzer), prints a summary; exit 1 when anything was found.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATUS = re.compile(r"^#(\d+):?\s+\w*\s*cov: (\d+) ft: (\d+) corp: (\d+)(?:/\S+)? .*?exec/s: (\d+)(?:.*?time: (\d+)s)?")
PLAIN = re.compile(r"^#(\d+)\s+(?:NEW|REDUCE|pulse|INITED|DONE)\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+ .*?exec/s: (\d+)")


def corpus_stats(d):
    files = [f for f in glob.glob(os.path.join(d, "*")) if os.path.isfile(f)]
    return {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files)}


def run(cmd, env=None, timeout=None, log=None):
    e = dict(os.environ)
    e.update(env or {})
    try:
        p = subprocess.run(cmd, env=e, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           errors="replace")
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as t:
        out, rc = (t.stdout or b"").decode(errors="replace") if isinstance(t.stdout, bytes) else (t.stdout or ""), 124
    if log:
        with open(log, "a") as f:
            f.write("$ " + " ".join(cmd) + "\n" + out + "\n")
    return rc, out


def describe(out):
    """One line saying what an artifact does, from the fuzzer's output on it."""
    for pat in (r"(\w+_fuzzer: FAIL \(.*)", r"(case_file_fuzzer: (?:an accepted|a file ended).*)", r"SUMMARY: (\w+Sanitizer: .*)",
                r"(hy4 cpu executor: .*)", r"(==\d+== ERROR: libFuzzer: timeout.*)", r"(ALARM: working on the last Unit.*)",
                r"(==\d+== ERROR: libFuzzer: out-of-memory.*)", r"(terminate called .*)", r"(runtime error: .*)",
                r"(==\d+== ERROR: libFuzzer: deadly signal)"):
        m = re.search(pat, out)
        if m:
            line = re.sub(r"==\d+==\s*", "", m.group(1)).strip()
            line = re.sub(r"0x[0-9a-f]{6,}", "ADDR", line)
            return line[:300]
    return "unclassified failure (see the log)"


def fuzz_one(args, name, exe, secs, out_dir):
    fdir = os.path.join(out_dir, name)
    art = os.path.join(fdir, "artifacts")
    cases = os.path.join(fdir, "cases")
    for d in (art, cases):
        os.makedirs(d, exist_ok=True)
    corpus = os.path.join(args.corpus, name)
    os.makedirs(corpus, exist_ok=True)
    seeds = os.path.join(ROOT, "fuzz", "corpus", name)
    before = corpus_stats(corpus)
    cmd = [exe, f"-fork={args.jobs}", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1",
           f"-max_total_time={secs}", "-timeout=30", "-rss_limit_mb=3072", "-max_len=4096", "-print_final_stats=1",
           f"-artifact_prefix={art}/"]
    d = os.path.join(ROOT, "fuzz", "dict", name + ".dict")
    if os.path.exists(d):
        cmd.append(f"-dict={d}")
    cmd += [corpus] + ([seeds] if os.path.isdir(seeds) else [])
    env = {"HY4_CASE_DIR": cases, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1:handle_abort=1",
           "UBSAN_OPTIONS": "print_stacktrace=1"}
    log = os.path.join(fdir, "fuzz.log")
    t0 = time.time()
    with open(log, "w") as lf:
        p = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=lf, stderr=subprocess.STDOUT, cwd=fdir)
        p.wait()
    wall = time.time() - t0
    series, execs, eps, first_fail = [], 0, 0, None
    for line in open(log, errors="replace"):
        f = re.search(r"oom/timeout/crash: (\d+)/(\d+)/(\d+) time: (\d+)s", line)
        if f and first_fail is None and sum(int(x) for x in f.groups()[:3]) > 0:
            first_fail = int(f.group(4))  # seconds into the run when the first failure was seen
        m = STATUS.match(line) or PLAIN.match(line)
        if m:
            execs = max(execs, int(m.group(1)))
            eps = int(m.group(5))
            t = int(m.group(6)) if m.lastindex and m.lastindex >= 6 and m.group(6) else None
            series.append([t, int(m.group(3)), int(m.group(2)), int(m.group(4))])
    # Fork mode reports `time:`; plain lines do not: spread them over the run.
    for i, s in enumerate(series):
        if s[0] is None:
            s[0] = round(wall * (i + 1) / len(series), 1)
    # Merge: the kept corpus becomes the minimal set covering what the night found.
    merged = corpus + ".merged"
    shutil.rmtree(merged, ignore_errors=True)
    os.makedirs(merged)
    rc, _ = run([exe, "-merge=1", "-timeout=30", "-rss_limit_mb=3072", merged, corpus], env=env, timeout=max(120, secs),
                log=os.path.join(fdir, "merge.log"))
    if rc == 0 and os.listdir(merged):
        shutil.rmtree(corpus)
        os.rename(merged, corpus)
    else:
        shutil.rmtree(merged, ignore_errors=True)
    after = corpus_stats(corpus)
    return {"fuzzer": name, "seconds": round(wall, 1), "jobs": args.jobs, "execs": execs,
            "exec_per_s": round(execs / wall, 1) if wall > 0 else 0, "last_exec_per_s": eps,
            "first_failure_after_s": first_fail, "features_over_time": series, "features": series[-1][1] if series else 0,
            "corpus_before": before, "corpus_after": after, "log": log, "findings": []}


def case_flags(case_path):
    warp, graph = "64", False
    try:
        for line in open(case_path, errors="replace"):
            if line.startswith("text origin"):
                m = re.search(r"warp(\d+)", line)
                warp = m.group(1) if m else warp
                graph = " graph" in line
    except OSError:
        pass
    return warp, graph


def triage(args, res, exe, out_dir):
    """Artifacts -> groups by description -> minimised -> case files -> hy4-repro."""
    name = res["fuzzer"]
    fdir = os.path.join(out_dir, name)
    arts = sorted(glob.glob(os.path.join(fdir, "artifacts", "*")), key=os.path.getsize)
    groups = {}
    tmp_cases = os.path.join(fdir, "triage-cases")
    for a in arts[: args.max_artifacts]:
        shutil.rmtree(tmp_cases, ignore_errors=True)
        os.makedirs(tmp_cases)
        rc, out = run([exe, "-timeout=30", "-rss_limit_mb=3072", a], env={"HY4_CASE_DIR": tmp_cases}, timeout=120)
        if rc == 0:
            continue  # did not reproduce (a flaky or resource failure): left in artifacts/
        desc = describe(out)
        key = re.sub(r"\d+", "N", desc)  # same class whatever the sizes and indices
        groups.setdefault(key, (a, desc))
    findings = []
    fnd = os.path.join(out_dir, "findings")
    os.makedirs(fnd, exist_ok=True)
    for key, (a, desc) in groups.items():
        tag = hashlib.sha1(key.encode()).hexdigest()[:10]
        stem = f"{name}.{tag}"
        minimized = os.path.join(fnd, stem + ".input")
        t0 = time.time()
        run([exe, "-minimize_crash=1", f"-max_total_time={args.minimize_seconds}", "-timeout=30",
             f"-exact_artifact_path={minimized}", a], env={"HY4_CASE_DIR": os.path.join(fdir, "minimize-cases")},
            timeout=args.minimize_seconds + 120, log=os.path.join(fdir, "minimize.log"))
        if not os.path.exists(minimized):
            shutil.copy(a, minimized)
        # The case file: a mismatch writes its own (the case as run, with the verdict);
        # otherwise HY4_FUZZ_CASE_OUT keeps the decoded case before the crash.
        shutil.rmtree(tmp_cases, ignore_errors=True)
        os.makedirs(tmp_cases)
        case = os.path.join(fnd, stem + ".case")
        rc, out = run([exe, "-timeout=30", minimized], timeout=120,
                      env={"HY4_CASE_DIR": tmp_cases, "HY4_FUZZ_CASE_OUT": case,
                           "HY4_FUZZ_DESCRIPTION": f"{name} finding: {desc}"})
        written = sorted(glob.glob(os.path.join(tmp_cases, "*.case")))
        if written:
            shutil.copy(written[-1], case)
        flags = None
        if name == "case_file":  # the input is a case file behind one byte (bit 0 graph, bit 1 wave64)
            data = open(minimized, "rb").read()
            if data:
                with open(case, "wb") as cf:
                    cf.write(data[1:])
                flags = ("64" if data[0] & 2 else "32", bool(data[0] & 1))
        f = {"fuzzer": name, "description": desc, "artifact": a, "input": minimized,
             "minimize_seconds": round(time.time() - t0, 1), "case": case if os.path.exists(case) else None,
             "replay_input": f"{exe} {minimized}"}
        if f["case"]:
            warp, graph = flags or case_flags(case)
            cmd = [os.path.join(args.cpu_build, "regressions", "hy4-repro"), "--warp", warp] + (["--graph"] if graph else []) + [case]
            rc, out = run(cmd, timeout=600)
            f["hy4_repro"] = " ".join(cmd)
            f["hy4_repro_exit"] = rc
            f["hy4_repro_fails"] = rc != 0
            f["hy4_repro_line"] = (out.strip().splitlines() or [""])[-1][:300]
        findings.append(f)
    res["findings"] = findings


def gpu_campaign(args, out_dir, results):
    repro = os.path.join(args.gpu_build, "regressions", "hy4-repro")
    conf = os.path.join(args.gpu_build, "tools", "hy4-conformance")
    cases = sorted(glob.glob(os.path.join(ROOT, "regressions", "cases", "*.case")))
    cases += [f["case"] for r in results for f in r["findings"] if f.get("case")]
    if args.replay_only:
        cases += sorted(glob.glob(os.path.join(args.replay_only, "*.case")))
    log = os.path.join(out_dir, "gpu.log")
    g = {"build": args.gpu_build, "cases": len(cases)}
    rc1, _ = run([repro, "--require-gpu"] + cases, timeout=1800, log=log) if cases else (0, "")
    rc2, _ = run([repro, "--require-gpu", "--graph"] + cases, timeout=1800, log=log) if cases else (0, "")
    g["replay_eager_exit"], g["replay_graph_exit"] = rc1, rc2
    if args.stream > 0 and os.path.exists(conf):
        rc3, out = run([conf, "--require-gpu", "--cases-per-seed", str(args.stream)], timeout=3600, log=log)
        g["stream_cases_per_op"], g["stream_exit"] = args.stream, rc3
    g["ok"] = all(v == 0 for k, v in g.items() if k.endswith("_exit"))
    return g


def svg_plot(results, path):
    """Coverage features over time, one small panel per fuzzer (no plotting package needed)."""
    n = max(1, len(results))
    cols = 3
    rows = (n + cols - 1) // cols
    W, H, pad = 320, 200, 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * W}" height="{rows * H + 30}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="10" y="18" font-size="14">hy4check fuzz campaign: coverage features (ft) over time</text>']
    for i, r in enumerate(results):
        x0, y0 = (i % cols) * W, 30 + (i // cols) * H
        s = r["features_over_time"] or [[0, 0, 0, 0]]
        tmax = max(1, max(p[0] for p in s))
        fmin, fmax = min(p[1] for p in s), max(p[1] for p in s)
        fmin = min(fmin, fmax - 1)
        sx = lambda t: x0 + pad + (W - pad - 10) * t / tmax
        sy = lambda f: y0 + H - pad + 10 - (H - pad - 20) * (f - fmin) / (fmax - fmin)
        pts = " ".join(f"{sx(p[0]):.1f},{sy(p[1]):.1f}" for p in s)
        out.append(f'<rect x="{x0 + pad}" y="{y0 + 10}" width="{W - pad - 10}" height="{H - pad - 20}" fill="none" stroke="#999"/>')
        out.append(f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>')
        nf = len(r["findings"])
        out.append(f'<text x="{x0 + pad}" y="{y0 + 8}">{r["fuzzer"]}: ft {fmin}..{fmax}, {r["exec_per_s"]} exec/s'
                   f'{", %d finding(s)" % nf if nf else ""}</text>')
        out.append(f'<text x="{x0 + pad}" y="{y0 + H - pad + 24}">0</text>')
        out.append(f'<text x="{x0 + W - 40}" y="{y0 + H - pad + 24}">{tmax} s</text>')
        out.append(f'<text x="{x0 + 2}" y="{y0 + 20}">{fmax}</text>')
        out.append(f'<text x="{x0 + 2}" y="{y0 + H - pad + 10}">{fmin}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-t", type=int, default=600, help="fuzzing seconds for the whole campaign (default 600)")
    ap.add_argument("-j", dest="jobs", type=int, default=max(1, os.cpu_count() or 1), help="libFuzzer fork jobs")
    ap.add_argument("-o", dest="out", default=os.path.join(ROOT, "fuzz-campaign"), help="output folder")
    ap.add_argument("-c", dest="corpus", default=None, help="corpus root kept between nights (default OUT/corpus)")
    ap.add_argument("-b", dest="cpu_build", default=os.path.join(ROOT, "build", "cpu"))
    ap.add_argument("-g", dest="gpu_build", default=None, help="a GPU build folder: replay findings there")
    ap.add_argument("--stream", type=int, default=0, help="with -g: generated cases per op on the GPU")
    ap.add_argument("--minimize-seconds", type=int, default=60)
    ap.add_argument("--max-artifacts", type=int, default=40, help="artifacts triaged per fuzzer (smallest first)")
    ap.add_argument("--replay-only", default=None, metavar="FINDINGS",
                    help="with -g: no fuzzing; replay FINDINGS/*.case and the regression cases on the GPU")
    ap.add_argument("fuzzers", nargs="*")
    args = ap.parse_args()
    args.out = os.path.abspath(args.out)
    if args.replay_only is not None:
        if not args.gpu_build:
            print("fuzz campaign: --replay-only needs -g GPU_BUILD", file=sys.stderr)
            return 2
        if not os.path.isdir(args.replay_only):
            print(f"fuzz campaign: --replay-only: no folder '{args.replay_only}'", file=sys.stderr)
            return 2
        os.makedirs(args.out, exist_ok=True)
        g = gpu_campaign(args, args.out, [])
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump({"replay_only": os.path.abspath(args.replay_only), "gpu": g}, f, indent=1)
        print(f"fuzz campaign (replay only): {g}")
        return 0 if g["ok"] else 1
    args.corpus = os.path.abspath(args.corpus or os.path.join(args.out, "corpus"))
    fz = os.path.join(args.cpu_build, "fuzz")
    avail = sorted(os.path.basename(p)[: -len("_fuzzer")] for p in glob.glob(os.path.join(fz, "*_fuzzer"))
                   if os.access(p, os.X_OK))
    if not avail:
        print(f"fuzz campaign: no fuzzers in {fz} (cmake --preset cpu && cmake --build build/cpu)", file=sys.stderr)
        return 2
    names = args.fuzzers or avail
    for n in names:
        if n not in avail:
            print(f"fuzz campaign: unknown fuzzer '{n}' (have: {' '.join(avail)})", file=sys.stderr)
            return 2
    os.makedirs(args.out, exist_ok=True)
    secs = max(10, args.t // len(names))
    print(f"fuzz campaign: {len(names)} fuzzers x {secs} s, fork {args.jobs} jobs; out {args.out}; corpus {args.corpus}",
          flush=True)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results = []
    for n in names:
        exe = os.path.join(fz, n + "_fuzzer")
        r = fuzz_one(args, n, exe, secs, args.out)
        triage(args, r, exe, args.out)
        results.append(r)
        print(f"  {n:10s} {r['execs']:9d} execs {r['exec_per_s']:8.1f} exec/s  ft {r['features']:6d}  corpus "
              f"{r['corpus_before']['files']} -> {r['corpus_after']['files']}  findings {len(r['findings'])}"
              + (f" (first failure after {r['first_failure_after_s']} s)" if r['first_failure_after_s'] is not None else ""),
              flush=True)
        for f in r["findings"]:
            print(f"    finding: {f['description']}\n      case {f['case']}  hy4-repro fails: {f.get('hy4_repro_fails')}"
                  f"\n      replay: {f.get('hy4_repro', f['replay_input'])}", flush=True)
    summary = {"started": started, "fuzz_seconds_each": secs, "jobs": args.jobs, "cpu_build": args.cpu_build,
               "fuzzers": results}
    if args.gpu_build:
        summary["gpu"] = gpu_campaign(args, args.out, results)
        print(f"  gpu: {summary['gpu']}")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    svg_plot(results, os.path.join(args.out, "coverage.svg"))
    total = sum(len(r["findings"]) for r in results)
    print(f"fuzz campaign done: {total} finding(s); summary {args.out}/summary.json, plot {args.out}/coverage.svg")
    return 1 if total or (args.gpu_build and not summary["gpu"]["ok"]) else 0


if __name__ == "__main__":
    sys.exit(main())
