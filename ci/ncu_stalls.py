#!/usr/bin/env python3
"""ncu_stalls.py: where a kernel's warps wait, per SASS instruction, from an ncu source page.

ci/ncu_probe.sh (on the GPU machine) profiles one hy4-bench launch with warp-state
sampling and exports the source page:

    ncu -i REPORT.ncu-rep --page source --csv --print-source sass > REPORT.source.csv

This prints, for that CSV: the total samples and their stall reasons, then the SASS in
program order with each instruction's samples, the running total (so a stage's share is
the difference of two running totals), how often it executed and its two largest stall
reasons.  Only instructions with at least --min samples are printed, plus every memory,
barrier, shuffle and exit instruction (the landmarks that split a kernel into stages).

    python3 ci/ncu_stalls.py REPORT.source.csv [--min N] [--all]
    python3 ci/ncu_stalls.py --self-test

Samples are where warps were found, not time: with 8 warps in a block, a stage where all 8
wait counts 8 times per interval.  Compare stages of one kernel, not kernels.
Exit status: 0, 2 on a file that is not an ncu source page (the message names the line).
"""
import argparse
import csv
import io
import sys

LANDMARKS = ("LDG", "STG", "LDS", "STS", "BAR", "SHFL", "EXIT", "LDC", "REDUX", "MATCH", "VOTE")


def fail(msg):
    print(f"ncu_stalls: {msg}", file=sys.stderr)
    sys.exit(2)


def parse(text, name):
    rows = list(csv.reader(io.StringIO(text)))
    # the page starts with a "Kernel Name" line, then the header
    head = next((i for i, r in enumerate(rows) if r and r[0] == "Address"), None)
    if head is None:
        fail(f"{name}: no header line starting with \"Address\" (is it `--page source --csv --print-source sass`?)")
    hdr = rows[head]
    col = {h: i for i, h in enumerate(hdr)}
    for need in ("Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"):
        if need not in col:
            fail(f"{name}:{head + 1}: header has no column \"{need}\"")
    stalls = [h for h in hdr if h.startswith("stall_") and "(Not Issued)" not in h]
    out = []
    for n, r in enumerate(rows[head + 1:], start=head + 2):
        if not r:
            continue
        if len(r) != len(hdr):
            fail(f"{name}:{n}: {len(r)} fields, the header has {len(hdr)}")

        def num(h):
            v = r[col[h]].replace(",", "").strip()
            try:
                return int(float(v)) if v else 0
            except ValueError:
                fail(f"{name}:{n}: column \"{h}\" is not a number: {v!r}")

        out.append({
            "addr": r[col["Address"]],
            "sass": r[col["Source"]].strip(),
            "samples": num("Warp Stall Sampling (All Samples)"),
            "executed": num("Instructions Executed"),
            "stalls": {h[len("stall_"):]: num(h) for h in stalls},
        })
    return out


def report(instrs, min_samples, show_all, w=sys.stdout):
    total = sum(i["samples"] for i in instrs)
    reasons = {}
    for i in instrs:
        for k, v in i["stalls"].items():
            reasons[k] = reasons.get(k, 0) + v
    print(f"{len(instrs)} instructions, {total} samples", file=w)
    top = sorted(((v, k) for k, v in reasons.items() if v), reverse=True)
    print("stall reasons: " + ", ".join(f"{k} {v} ({100.0 * v / max(total, 1):.0f} %)" for v, k in top), file=w)
    print(f"{'offset':>7} {'samp':>5} {'cum':>6} {'cum%':>5} {'exec':>7}  sass / top stalls", file=w)
    cum = 0
    first = None
    for i in instrs:
        try:
            a = int(i["addr"], 16)
        except ValueError:
            a = 0
        first = a if first is None else first
        cum += i["samples"]
        op = i["sass"].split()
        opcode = next((t for t in op if not t.startswith("@")), "")
        landmark = any(opcode.startswith(m) for m in LANDMARKS)
        if show_all or i["samples"] >= min_samples or landmark:
            st = sorted(((v, k) for k, v in i["stalls"].items() if v), reverse=True)[:2]
            why = " ".join(f"{k}={v}" for v, k in st)
            pct = 100.0 * cum / max(total, 1)
            print(f"{a - first:#7x} {i['samples']:5d} {cum:6d} {pct:5.1f} {i['executed']:7d}  {i['sass'][:58]:58s} {why}",
                  file=w)
    return total, reasons


def self_test():
    hdr = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed",
           "stall_long_sb", "stall_wait", "stall_long_sb (Not Issued)"]
    lines = [["Kernel Name", "k"], hdr,
             ["0x10", "LDC R1, c[0x0][0x28]", "2", "8", "0", "2", "0"],
             ["0x20", "LDG.E R4, desc[UR4][R2.64]", "0", "8", "0", "0", "0"],
             ["0x30", "IMAD R5, R4, 0x2, RZ", "10", "8", "9", "1", "9"],
             ["0x40", "@P0 EXIT", "1", "8", "0", "1", "0"]]
    buf = io.StringIO()
    csv.writer(buf).writerows(lines)
    instrs = parse(buf.getvalue(), "self-test")
    sink = io.StringIO()
    total, reasons = report(instrs, 5, False, sink)
    text = sink.getvalue()
    ok = (total == 13 and reasons == {"long_sb": 9, "wait": 4} and "LDG.E" in text and "EXIT" in text
          and "IMAD" in text and "   0x20" in text and " 12  92.3" in text)
    print("ncu_stalls self-test: " + ("PASS" if ok else "FAIL\n" + text))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="?")
    ap.add_argument("--min", type=int, default=3, help="print instructions with at least this many samples")
    ap.add_argument("--all", action="store_true", help="print every instruction")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.csv:
        fail("name the CSV (ncu -i R.ncu-rep --page source --csv --print-source sass > R.source.csv)")
    try:
        text = open(a.csv, encoding="utf-8", errors="replace").read()
    except OSError as e:
        fail(f"{a.csv}: {e.strerror}")
    report(parse(text, a.csv), a.min, a.all)
    return 0


if __name__ == "__main__":
    sys.exit(main())
