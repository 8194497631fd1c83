#!/usr/bin/env python3
"""mutant_sweep.py: the bugs nobody thought of - every small edit of a kernel's code, run.

ci/plants.txt holds the bugs someone wrote down.  This sweep makes the rest mechanically:
each mutant is one operator changed on one code line of a kernel file (comments and
preprocessor lines are left alone), built and run in plant_campaign's scratch copy, with
the same mechanics (plant_campaign.prepare / try_plant; your tree is never edited):

  rel      a < b -> a <= b, <= -> <, > -> >=, >= -> >, == -> !=, != -> ==  (spaced operators)
  logic    && -> ||, || -> &&
  off1     "+ 1" and "- 1" dropped  (an index, a bound or a count one off)
  minmax   min( <-> max(, fminf( <-> fmaxf(
  sync     a dev::sync_block(); or dev::sync_warp(); dropped  (a missing barrier: a race)
  warp     dev::warp_size() -> 32, -> 64  (a kernel that assumes one warp size)
  arith    a + b -> a - b, a - b -> a + b  (spaced; not in the default set: many, most caught
           at once; run it with --sample)
  bits     & <-> |, ^ -> |, << <-> >>  (spaced; not in the default set: masks, packed keys,
           power-of-two divisions)
  stride   "* x_stride" -> "* y_stride" (also sink's *_ts, *_hs), y another stride named
           within 25 lines above or 5 below (the upstream bug's kind: a sorter that ignored
           its input's stride; not in the default set; a y not in scope does not build)

A mutant is CAUGHT when some test of the file's ctest label fails (ctest stops at the first
failure), SURVIVED when the whole label passes.  A survivor is either a hole in the suite
or an equivalent mutant (the edit cannot change any result: a bound no input reaches, a
min of two equal values); read it, then write the test that fails on it and add it to
ci/plants.txt, or say why it is equivalent.  Survivors are written as plant blocks (--out),
ready to paste.  Mutants that repeat a plant of ci/plants.txt, or that
ci/mutants_equivalent.txt lists as judged equivalent (with the reason), are not run again.

    python3 ci/mutant_sweep.py kernels/topk.hip [more files] [--label topk] [--ops rel,off1]
        [--lines 100-250] [--sample N --seed S] [--resume] [--list] [--out FILE]

--label defaults to the op named in the file's name (gate, sink, topk, routing).  --sample
runs N mutants picked by --seed (a nightly job can walk a file in slices); --resume skips
mutants the log (--work/mutant_sweep.log) already has a verdict for.  A mutant takes one
rebuild and one label run, stopped at the first failure: ~20 s when caught, 30 s (gate,
routing) to 2 min (topk) when it survives, on 2 cores.  Exit status: 0 no survivor, 1 a
survivor or a mutant that did not build, 2 bad arguments.
"""
import argparse
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plant_campaign  # noqa: E402  (prepare, try_plant, parse, apply: the same scratch-copy mechanics)

ROOT = plant_campaign.ROOT
OPS = ("gate", "sink", "topk", "routing")
OPERATORS = {
    "rel": [(re.compile(re.escape(a)), b) for a, b in
            [(" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > "), (" == ", " != "), (" != ", " == ")]],
    "logic": [(re.compile(re.escape(a)), b) for a, b in [(" && ", " || "), (" || ", " && ")]],
    "off1": [(re.compile(r" \+ 1(?![\d.xXuUlLfF])"), ""), (re.compile(r" - 1(?![\d.xXuUlLfF])"), "")],
    "minmax": [(re.compile(r"\bmin\("), "max("), (re.compile(r"\bmax\("), "min("),
               (re.compile(r"\bfminf\("), "fmaxf("), (re.compile(r"\bfmaxf\("), "fminf(")],
    "sync": [(re.compile(r"\bdev::sync_(?:block|warp)\(\);"), ";")],
    "warp": [(re.compile(r"\bdev::warp_size\(\)"), "32"), (re.compile(r"\bdev::warp_size\(\)"), "64")],
    "arith": [(re.compile(r" \+ "), " - "), (re.compile(r" - "), " + ")],
    "bits": [(re.compile(re.escape(a)), b) for a, b in
             [(" & ", " | "), (" | ", " & "), (" ^ ", " | "), (" << ", " >> "), (" >> ", " << ")]],
}
OPERATORS["stride"] = []  # context-dependent: see stride_edits
DEFAULT_OPS = ("rel", "logic", "off1", "minmax", "sync", "warp")
STRIDE_USE = re.compile(r"\* (\w+_(?:stride|ts|hs))\b")  # sink's strides: out_ts (token), out_hs (head)
STRIDE_NAME = re.compile(r"\b(\w+_(?:stride|ts|hs))\b")


def stride_edits(all_lines, n, code):
    """(start, end, replacement) for each stride used as "* x_stride" in code (line n, from
    1), swapped for each other stride named near it (so that it is in scope)."""
    near = []
    for l in all_lines[max(0, n - 26):n + 5]:
        for name in STRIDE_NAME.findall(l):
            if name not in near:
                near.append(name)
    out = []
    for m in STRIDE_USE.finditer(code):
        for other in near:
            if other != m.group(1):
                out.append((m.start(1), m.end(1), other))
    return out


def fail(msg):
    print(f"mutant_sweep: {msg}", file=sys.stderr)
    sys.exit(2)


EQUIVALENT = os.path.join(ROOT, "ci", "mutants_equivalent.txt")


def parse_equivalent(path):
    """ci/mutants_equivalent.txt: survivors read and judged equivalent (no input can tell
    them from the kernel), each with its reason; the sweep does not run them again.
    Blocks as in plants.txt: mutant NAME, file, old, new, [at], why."""
    if not os.path.isfile(path):
        return []
    out = plant_campaign.parse(path, "mutant", ("mutant", "file", "old", "new", "at", "why"),
                               ("mutant", "file", "old", "new", "why"), fail)
    texts = {}
    for e in out:
        if e["file"] not in texts:
            path_e = os.path.join(ROOT, e["file"])
            texts[e["file"]] = open(path_e).read() if os.path.isfile(path_e) else ""
        if texts[e["file"]].count(e["old"]) < int(e.get("at", "1")):
            fail(f"{path}:{e['_line']}: mutant {e['mutant']}: its line no longer occurs in {e['file']}; "
                 f"mend or drop it")
    return out


def code_part(line):
    """The code of a line: '' for comment and preprocessor lines, else the text before a //
    comment with the insides of its string literals blanked (same length, so a match's
    position is the line's): an operator in a message ("r < kMaxDim") is not code, and
    mutating it changed nothing but the text (two survivors of the thirty-second session's
    sink sweep, in a static_assert's message)."""
    s = line.strip()
    if not s or s.startswith(("//", "/*", "*", "#")):
        return ""
    out, quoted, escaped = [], False, False
    for ch in line:
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
                out.append(ch)
                continue
            out.append(" ")
        else:
            quoted = ch == '"'
            out.append(ch)
    code = "".join(out)
    return code.split("//", 1)[0] if "//" in code else code


def mutants_of(rel, text, ops, lines):
    """Every mutant of the file: dicts in plant form (file, old = the whole line, new, at)."""
    out = []
    pos = 0
    all_lines = text.split("\n")
    for n, line in enumerate(all_lines, 1):
        start, pos = pos, pos + len(line) + 1
        if lines and not (lines[0] <= n <= lines[1]):
            continue
        code = code_part(line)
        if not code:
            continue
        hits = None
        for op in ops:
            if op == "stride":
                classes = [stride_edits(all_lines, n, code)]
            else:
                classes = [[(m.start(), m.end(), rep) for m in pat.finditer(code)] for pat, rep in OPERATORS[op]]
            for k, edits in enumerate(classes):
                for j, (m_start, m_end, rep) in enumerate(edits):
                    if hits is None:
                        # the plant's 'at': which occurrence of the line's text (as apply
                        # finds them) is this line; once per line
                        hits, i = [], text.find(line)
                        while i >= 0:
                            hits.append(i)
                            i = text.find(line, i + 1)
                    out.append({"file": rel, "old": line, "new": line[:m_start] + rep + line[m_end:],
                                "at": str(hits.index(start) + 1), "_many": len(hits) > 1, "_line": n,
                                "id": f"{rel}:{n}:{op}{k}.{j}"})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="kernel files, relative to the repository root")
    ap.add_argument("--label", default="", help="ctest label to run (default: the op in the file name)")
    ap.add_argument("--ops", default=",".join(DEFAULT_OPS),
                    help=f"operator classes (default {','.join(DEFAULT_OPS)}; also: arith, bits, stride)")
    ap.add_argument("--lines", default="", help="A-B: only mutate lines A..B (with one file)")
    ap.add_argument("--sample", type=int, default=0, help="run N mutants picked by --seed (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", default="/tmp/hy4-plants", help="scratch copy (shared with plant_campaign)")
    ap.add_argument("--timeout", type=int, default=300, help="ctest per-test limit, s (a hang is CAUGHT by it)")
    ap.add_argument("--resume", action="store_true", help="skip mutants the log already judged")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--out", default="", help="survivors as plant blocks (default <work>/survivors.txt)")
    a = ap.parse_args()
    ops = a.ops.split(",")
    for op in ops:
        if op not in OPERATORS:
            fail(f"--ops: unknown class {op!r} (expected some of {', '.join(OPERATORS)})")
    lines = ()
    if a.lines:
        m = re.fullmatch(r"(\d+)-(\d+)", a.lines)
        if not m or len(a.files) != 1:
            fail(f"--lines {a.lines!r}: give A-B (line numbers) with exactly one file")
        lines = (int(m.group(1)), int(m.group(2)))
    planted = {}
    for p in plant_campaign.parse(os.path.join(ROOT, "ci", "plants.txt")) + parse_equivalent(EQUIVALENT):
        planted.setdefault(p["file"], []).append(p)
    mutants = []
    for rel in a.files:
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path):
            fail(f"{rel}: no such file under {ROOT}")
        label = a.label or next((o for o in OPS if o in os.path.basename(rel)), "")
        if not label:
            fail(f"{rel}: its name names no op; give --label")
        text = open(path).read()
        known = set()
        for p in planted.get(rel, []):
            try:
                known.add(plant_campaign.apply(text, p))
            except ValueError:
                pass  # a plant that no longer applies: plant_campaign --check says so
        for m in mutants_of(rel, text, ops, lines):
            m["label"] = label
            if plant_campaign.apply(text, m) not in known:
                mutants.append(m)
    if a.sample and a.sample < len(mutants):
        mutants = sorted(random.Random(a.seed).sample(mutants, a.sample), key=lambda m: (m["file"], m["_line"]))
    work = os.path.abspath(a.work)
    log = os.path.join(work, "mutant_sweep.log")
    if a.resume and os.path.isfile(log):
        done = {l.split()[1] for l in open(log) if len(l.split()) >= 2}
        mutants = [m for m in mutants if m["id"] not in done]
    if a.list:
        for m in mutants:
            print(f"{m['id']:36s} {m['label']:8s} {m['new'].strip()}")
        print(f"{len(mutants)} mutants")
        return 0
    if not mutants:
        print("mutant_sweep: no mutant to run")
        return 0
    plant_campaign.stop_on_sigterm()
    build = plant_campaign.prepare(a.work)
    out = a.out or os.path.join(work, "survivors.txt")
    counts = {}
    print(f"mutant_sweep: {len(mutants)} mutants; survivors go to {out}", flush=True)
    for m in mutants:
        verdict, detail, seconds = plant_campaign.try_plant(build, m, stop_on_failure=True, timeout=a.timeout)
        verdict = "SURVIVED" if verdict == "MISSED" else verdict
        counts[verdict] = counts.get(verdict, 0) + 1
        print(f"{verdict:12s} {m['id']:36s} {seconds:4.0f} s  {m['new'].strip()[:70]}  {detail[:100]}", flush=True)
        with open(log, "a") as f:
            f.write(f"{verdict} {m['id']} {m['new'].strip()}\n")
        if verdict == "SURVIVED":
            op = m["label"]
            with open(out, "a") as f:
                f.write(f"# survived mutant_sweep: {m['id']}\nplant {op}.mutant-{os.path.basename(m['file']).split('.')[0]}"
                        f"-{m['_line']}-{m['id'].rsplit(':', 1)[1]}\nlabel {op}\nfile {m['file']}\n"
                        f"old {m['old']}\nnew {m['new']}\n" + (f"at {m['at']}\n" if m["_many"] else "") + "\n")
    print(f"{counts.get('CAUGHT', 0)} of {len(mutants)} mutants caught, {counts.get('SURVIVED', 0)} survived, "
          f"{counts.get('BUILD-FAILED', 0)} did not build")
    return 0 if counts.get("CAUGHT", 0) == len(mutants) else 1


if __name__ == "__main__":
    sys.exit(main())
