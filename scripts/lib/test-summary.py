#!/usr/bin/env python3
"""Counts the test cases of `meson test` runs from their testlog.json files.

    test-summary.py [--note TEXT] TESTLOG.json...

Prints the skipped cases with their reasons, the failed ones, and last the line
"tests: N passed, N failed, N skipped" over every log given (scripts/test's main run and its
sanitizer run).  A Criterion binary counts as its cases (its
"Synthesis:" line and "[SKIP]" lines); any other test counts as one case by meson's verdict.
--note appends "; TEXT" to that line (scripts/test: what the aarch64 emulation covered).
Exits 1 if a case failed or none ran.
"""
import json
import os
import re
import sys

SYNTHESIS = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+)")
CASE = re.compile(r"^\[(SKIP|FAIL)\] (\S+?):? (.*)$", re.M)
MESON_PASS = {"OK", "EXPECTEDFAIL"}


def read_runs(paths):
    """(runs, tag) per log; with several logs a note names its build directory."""
    logs = []
    for path in paths:
        tag = ""
        if len(paths) > 1:
            tag = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(path)))) + ": "
        try:
            with open(path) as log:
                logs.append(([json.loads(line) for line in log if line.strip()], tag))
        except OSError as err:
            print(f"test-summary: no test log ({err})", file=sys.stderr)
    return [(run, tag) for runs, tag in logs for run in runs]


def main(paths, note=""):
    passed = failed = skipped = 0
    notes = []
    runs = read_runs(paths)
    for run, tag in runs:
        output = (run.get("stdout") or "") + (run.get("stderr") or "")
        result = run.get("result", "ERROR")
        synthesis = SYNTHESIS.findall(output)
        if synthesis:
            case_passed = sum(int(p) for _, p, _ in synthesis)
            case_failed = sum(int(f) for _, _, f in synthesis)
            cases = CASE.findall(output)
            case_skipped = sum(1 for kind, _, _ in cases if kind == "SKIP")
            notes += [f"{kind.lower()}: {tag}{name}: {why}" for kind, name, why in cases]
            if result not in MESON_PASS and case_failed == 0:
                # The binary failed outside its cases (sanitizer at exit, timeout, crash).
                case_failed = 1
                notes.append(f"fail: {tag}{run['name']}: {result} after its cases")
        elif result == "SKIP":
            case_passed, case_failed, case_skipped = 0, 0, 1
            # a plain test says why it skipped in its last line of output
            why = [line for line in output.splitlines() if line.strip()]
            notes.append(f"skip: {tag}{run['name']}" + (f": {why[-1].strip()}" if why else ""))
        elif result in MESON_PASS:
            case_passed, case_failed, case_skipped = 1, 0, 0
        else:
            case_passed, case_failed, case_skipped = 0, 1, 0
            notes.append(f"fail: {tag}{run['name']}: {result}")
        passed += case_passed
        failed += case_failed
        skipped += case_skipped
    for line in notes:
        print(line)
    if passed + failed == 0:
        print("test-summary: no test ran", file=sys.stderr)
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped" + (f"; {note}" if note else ""))
    return 1 if failed or passed + failed == 0 else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    note = ""
    if len(args) >= 2 and args[0] == "--note":
        note, args = args[1], args[2:]
    sys.exit(main(args, note))
