#!/usr/bin/env python3
"""ci/check_workflows.py: checks .github/workflows/*.yml and .clusterfuzzlite/project.yaml.

actionlint is not a Debian package, so this is the check used here: PyYAML
(python3-yaml) parses every file, then the structure GitHub Actions requires is
checked - `on` and `jobs` present, each job has runs-on and steps (or uses), each step
exactly one of run / uses, `needs` names existing jobs, every ${{ matrix.X }} is a key
of that job's matrix, every ${{ ... }} expression is closed, action references are
pinned (owner/repo@ref), cron lines have five fields, files named by `run:` steps in
ci/ exist.  Also runs `yamllint` when it is installed.  Exit 1 on any problem.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("check_workflows: SKIPPED: PyYAML missing (apt install python3-yaml)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
problems = []


def bad(path, msg):
    problems.append(f"{os.path.relpath(path, ROOT)}: {msg}")


def expressions(text):
    return re.findall(r"\$\{\{(.*?)\}\}", text, flags=re.S)


def check_workflow(path):
    text = open(path).read()
    if text.count("${{") != len(expressions(text)):
        bad(path, "an unclosed ${{ expression")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        bad(path, f"YAML: {e}")
        return
    if not isinstance(doc, dict):
        bad(path, "not a mapping")
        return
    # PyYAML reads the key `on` as the boolean True (YAML 1.1)
    on = doc.get("on", doc.get(True))
    if on is None:
        bad(path, "no `on:` trigger")
    if isinstance(on, dict):
        for ev in on:
            if ev not in {"push", "pull_request", "schedule", "workflow_dispatch", "workflow_call", "release"}:
                bad(path, f"unexpected trigger '{ev}'")
        for c in on.get("schedule") or []:
            if len(str(c.get("cron", "")).split()) != 5:
                bad(path, f"cron '{c.get('cron')}' does not have five fields")
    jobs = doc.get("jobs")
    if not isinstance(jobs, dict) or not jobs:
        bad(path, "no jobs")
        return
    for name, job in jobs.items():
        where = f"job '{name}'"
        if not isinstance(job, dict):
            bad(path, f"{where} is not a mapping")
            continue
        if "uses" not in job and ("runs-on" not in job or "steps" not in job):
            bad(path, f"{where} needs runs-on and steps")
        needs = job.get("needs", [])
        for n in [needs] if isinstance(needs, str) else needs:
            if n not in jobs:
                bad(path, f"{where} needs unknown job '{n}'")
        matrix = (job.get("strategy") or {}).get("matrix") or {}
        keys = set(matrix) if isinstance(matrix, dict) else set()
        jtext = yaml.safe_dump(job)
        for m in re.findall(r"matrix\.([A-Za-z_][A-Za-z0-9_-]*)", jtext):
            if m not in keys:
                bad(path, f"{where} uses matrix.{m}, which its matrix does not define")
        for i, st in enumerate(job.get("steps") or []):
            sw = f"{where} step {i + 1}"
            if not isinstance(st, dict):
                bad(path, f"{sw} is not a mapping")
                continue
            if ("run" in st) == ("uses" in st):
                bad(path, f"{sw} must have exactly one of run / uses")
            if "uses" in st and not re.fullmatch(r"[\w.-]+/[\w./-]+@[\w.-]+", str(st["uses"])):
                bad(path, f"{sw} uses '{st['uses']}', not owner/repo[/path]@ref")
            for f in re.findall(r"\b(ci/[\w./-]+\.(?:sh|py))", str(st.get("run", ""))):
                if not os.path.exists(os.path.join(ROOT, f)):
                    bad(path, f"{sw} runs {f}, which does not exist")


def check_cflite():
    p = os.path.join(ROOT, ".clusterfuzzlite", "project.yaml")
    if not os.path.exists(p):
        bad(p, "missing")
        return
    doc = yaml.safe_load(open(p))
    if not isinstance(doc, dict) or doc.get("language") not in {"c", "c++", "rust", "go", "python", "jvm", "swift"}:
        bad(p, "language missing or unknown")
    for f in ("Dockerfile", "build.sh"):
        if not os.path.exists(os.path.join(ROOT, ".clusterfuzzlite", f)):
            bad(p, f".clusterfuzzlite/{f} missing")


def main():
    files = sorted(glob.glob(os.path.join(ROOT, ".github", "workflows", "*.yml")))
    if not files:
        bad(os.path.join(ROOT, ".github/workflows"), "no workflow files")
    for f in files:
        check_workflow(f)
    check_cflite()
    lint = shutil.which("yamllint")
    if lint:
        r = subprocess.run([lint, "-d", "{extends: default, rules: {line-length: {max: 130}, document-start: disable, "
                            "truthy: disable, comments: {min-spaces-from-content: 1}}}"] + files,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            problems.append("yamllint:\n" + r.stdout)
    for p in problems:
        print("check_workflows: " + p)
    print(f"check_workflows: {len(files)} workflow files, .clusterfuzzlite; {'yamllint too' if lint else 'no yamllint'}: "
          f"{'FAIL' if problems else 'PASS'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
