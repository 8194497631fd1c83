#!/usr/bin/env python3
"""plant_campaign.py: does the suite catch the bugs we can think of?

Each plant in ci/plants.txt is one small edit of a kernel (a dropped rounding, a
tie-break swapped, a stride ignored, a case split moved by one).  The campaign works in
a scratch copy of the tree (--work, default /tmp/hy4-plants: the tracked files as they
are in your working tree, an unchanged file keeps its time stamp, so after the first
full build of the cpu preset every plant is an incremental build).  For each plant it
applies the edit there, rebuilds, runs the plant's ctest label (properties, graph
replay, regressions, fuzz corpora; warp 32 and 64), records CAUGHT (some test failed)
or MISSED, and puts the file back.  Your tree is never edited.  A MISSED plant is a
hole in the suite: write the test that fails on it, then keep the plant in the list.

    python3 ci/plant_campaign.py [--work DIR] [--only NAME[,NAME]] [--list | --check]

--check only parses the list and checks that every plant still applies (its text occurs
once): run it after editing a kernel, and mend the plants a change moved.

Exit status: 0 when every plant was caught, 1 when one was missed or did not build, 2
on a bad plant file (the message names its line).  The first run builds the whole cpu
preset (about 10 minutes on 2 cores); then a plant takes one rebuild and one label run,
1 to 3 minutes: the list is a nightly job.  The ctest `ci.plants` runs --check.  Plants file format (blocks separated by blank lines):

    plant <op>.<what>        name, unique
    label <ctest label>      gate | sink | topk | routing (what runs)
    file <path>              relative to the repository root
    old <text>               must occur exactly once in the file; \\n for a newline
    new <text>               its replacement
    at <n>                   optional: old occurs several times, replace the n-th (1-based)
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = ("plant", "label", "file", "old", "new", "at")
REQUIRED = ("plant", "label", "file", "old", "new")


def fail(msg):
    print(f"plant_campaign: {msg}", file=sys.stderr)
    sys.exit(2)


def block_lines(path, keys, error=None):
    """The lines of a block file (plants.txt, variants.txt, mutants_equivalent.txt): per
    key line (lineno, key, value), per blank line and at the end (lineno, None, None) - a
    block's end; # comments skipped.  A key not in keys fails (error, default this
    tool's fail), naming the line."""
    error = error or fail
    lineno = 0
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.startswith("#"):
                continue
            if not line.strip():
                yield lineno, None, None
                continue
            key, _, value = line.partition(" ")
            if key not in keys:
                error(f"{path}:{lineno}: unknown key {key!r} (expected one of {', '.join(keys)})")
            yield lineno, key, value
    yield lineno + 1, None, None


def parse(path, kind="plant", keys=KEYS, required=REQUIRED, error=None):
    """The blocks of a plant-format file, each a dict with '_line'; the name is under
    `kind` (plants.txt: plant; ci/mutants_equivalent.txt: mutant).  error: as in block_lines."""
    fail_ = error or fail
    plants, cur, names = [], {}, set()

    def close():
        if not cur:
            return
        missing = [k for k in required if k not in cur]
        if missing:
            fail_(f"{path}:{cur['_line']}: {kind} block lacks {', '.join(missing)}")
        if cur[kind] in names:
            fail_(f"{path}:{cur['_line']}: {kind} name {cur[kind]!r} repeats")
        names.add(cur[kind])
        plants.append(dict(cur))
        cur.clear()

    for lineno, key, value in block_lines(path, keys, fail_):
        if key is None:
            close()
            continue
        if key in cur:
            fail_(f"{path}:{lineno}: {key!r} given twice in one {kind} block")
        if not cur:
            cur["_line"] = lineno
        cur[key] = value.replace("\\n", "\n") if key in ("old", "new") else value.strip()
        if key == "at" and not (cur[key].isdigit() and int(cur[key]) >= 1):
            fail_(f"{path}:{lineno}: 'at' must be a positive number, not {cur[key]!r}")
    return plants


def select(items, key, only):
    """The items whose `key` is named in only (comma-separated; empty: all), and the names
    that match none (for the caller's error)."""
    if not only:
        return items, set()
    want = set(only.split(","))
    return [i for i in items if i[key] in want], want - {i[key] for i in items}


def sync_tree(work):
    """Copies the tracked files of the working tree into work, leaving unchanged ones alone."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for rel in (f.decode() for f in files if f):
        src, dst = os.path.join(ROOT, rel), os.path.join(work, rel)
        if not os.path.isfile(src):
            continue  # deleted in the working tree
        data = open(src, "rb").read()
        if os.path.isfile(dst) and open(dst, "rb").read() == data:
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
        shutil.copymode(src, dst)


def apply(text, p):
    """text with the plant's edit: its only occurrence of old, or the at-th."""
    at = int(p.get("at", "1"))
    i = -1
    for _ in range(at):
        i = text.index(p["old"], i + 1)
    return text[:i] + p["new"] + text[i + len(p["old"]):]


def prepare(work_arg):
    """Syncs the scratch copy and builds its cpu preset, unplanted; returns the build folder."""
    work = os.path.abspath(work_arg)
    if work == ROOT or ROOT.startswith(work + os.sep):
        fail(f"--work {work_arg}: must not be the repository or a folder above it")
    sync_tree(work)
    build = os.path.join(work, "build", "cpu")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        print(f"plant_campaign: configuring and building the cpu preset in {work} (first run)", flush=True)
        c = subprocess.run(["cmake", "--preset", "cpu"], cwd=work, capture_output=True, text=True)
        if c.returncode != 0:
            fail("cmake --preset cpu failed in the scratch copy:\n" + (c.stdout + c.stderr)[-1500:])
    b = subprocess.run(["cmake", "--build", build, "-j2"], capture_output=True, text=True)
    if b.returncode != 0:
        fail("the unplanted tree does not build in the scratch copy:\n" + (b.stdout + b.stderr)[-1500:])
    return build


def run_group(cmd, env=None):
    """subprocess.run(cmd) in a process group of its own: when the campaign is stopped
    (Ctrl-C, SIGTERM) the whole group goes, ctest's test binaries too - an orphaned test
    run would go on using the scratch copy and the cores beside the next campaign."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate()
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def stop_on_sigterm():
    """SIGTERM ends the campaign as Ctrl-C does: the planted file is put back (try_plant's
    finally) and the test run's process group killed.  (A background job of a
    non-interactive shell ignores SIGINT, so SIGTERM is how one stops it.)"""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def try_plant(build, p, stop_on_failure=False, timeout=900):
    """Applies plant p in the scratch copy that holds build, rebuilds, runs its label, and
    puts the file back.  Returns (CAUGHT | MISSED | BUILD-FAILED, detail, seconds).
    stop_on_failure: ctest stops at the first failing test (a sweep only needs one);
    timeout: ctest's per-test limit in seconds (a plant that hangs a test is CAUGHT by it)."""
    work = os.path.dirname(os.path.dirname(build))
    path = os.path.join(work, p["file"])
    original = open(path).read()
    t0 = time.time()
    try:
        open(path, "w").write(apply(original, p))
        b = subprocess.run(["cmake", "--build", build, "-j2"], capture_output=True, text=True)
        if b.returncode != 0:
            return "BUILD-FAILED", (b.stdout + b.stderr)[-800:], time.time() - t0
        # The tests' failure case files (ctest points HY4_CASE_DIR there): a plant's are
        # noise, and a long campaign filled gigabytes with them.
        shutil.rmtree(os.path.join(build, "hy4-failed-cases"), ignore_errors=True)
        cmd = ["ctest", "--test-dir", build, "-j2", "-L", p["label"], "--timeout", str(timeout)]
        stages = [cmd]
        env = None
        if stop_on_failure:
            # A sweep needs one failure, not its smallest form: rapidcheck does not shrink,
            # a test binary stops at its first failing test, and the quick tests (fuzz
            # corpora, regression cases: seconds) run first.
            env = dict(os.environ, RC_PARAMS="noshrink=1", GTEST_FAIL_FAST="1")
            quick = r"^(fuzz|regression)\."
            # The quick tests take under 40 s each: 120 s is a hang (a loop that never ends
            # cost the whole per-test limit, twice, before this).  The executor's block
            # watchdog (HY4_CPU_BLOCK_TIMEOUT_S, 60 s) now ends a hung test first, in
            # every stage.
            quick_cmd = cmd[:-1] + [str(min(timeout, 120))]
            # Then the conformance run (every op's bad-argument classes and limits, a few
            # cases each, ~15 s): a plan's refusal mutants fail there, not after the op's
            # whole property suite.
            conformance = ["ctest", "--test-dir", build, "-j2", "-L", "conformance", "--timeout",
                           str(min(timeout, 120)), "--stop-on-failure"]
            stages = [quick_cmd + ["-R", quick, "--stop-on-failure"], conformance,
                      cmd + ["-E", quick, "--stop-on-failure"]]
        failed = []
        for stage in stages:
            r = run_group(stage, env)
            # ctest's closing list: "The following tests FAILED:" then "\t 10 - name (Failed)"
            tail = r.stdout.split("The following tests FAILED:", 1)
            failed = [l.strip() for l in tail[1].splitlines() if re.match(r"\s+\d+ - ", l)] if len(tail) > 1 else []
            if not failed and r.returncode != 0 and "No tests were found" not in r.stdout + r.stderr:
                failed = [f"ctest exit status {r.returncode}"]
            if failed:
                break
        return ("CAUGHT" if failed else "MISSED"), "; ".join(failed[:6]), time.time() - t0
    finally:
        open(path, "w").write(original)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/tmp/hy4-plants", help="scratch copy of the tree (default /tmp/hy4-plants)")
    ap.add_argument("--plants", default=os.path.join(ROOT, "ci", "plants.txt"))
    ap.add_argument("--only", default="", help="comma-separated plant names")
    ap.add_argument("--list", action="store_true", help="print the plants and exit")
    ap.add_argument("--check", action="store_true", help="check that every plant applies, run none")
    a = ap.parse_args()
    plants = parse(a.plants)
    plants, unknown = select(plants, "plant", a.only)
    if unknown:
        fail(f"--only names no plant: {', '.join(sorted(unknown))}")
    if a.list:
        for p in plants:
            print(f"{p['plant']:40s} {p['label']:8s} {p['file']}")
        return 0
    for p in plants:  # every pattern checked before anything is touched
        path = os.path.join(ROOT, p["file"])
        if not os.path.isfile(path):
            fail(f"{a.plants}:{p['_line']}: plant {p['plant']}: file {p['file']} does not exist")
        n = open(path).read().count(p["old"])
        at = int(p.get("at", "0"))
        if (at == 0 and n != 1) or at > n:
            want = "once (or name the occurrence with 'at')" if at == 0 else f"at least {at} times ('at {at}')"
            fail(f"{a.plants}:{p['_line']}: plant {p['plant']}: its 'old' text occurs {n} times in {p['file']} (must be {want})")
    if a.check:
        print(f"plant_campaign: {len(plants)} plants apply")
        return 0
    stop_on_sigterm()
    build = prepare(a.work)
    results = []
    for p in plants:
        verdict, detail, seconds = try_plant(build, p)
        print(f"{verdict:12s} {p['plant']:40s} {seconds:5.0f} s  {detail}", flush=True)
        results.append(verdict)
    caught = results.count("CAUGHT")
    print(f"{caught} of {len(results)} plants caught, {results.count('MISSED')} missed, "
          f"{results.count('BUILD-FAILED')} did not build")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
