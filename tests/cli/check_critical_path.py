#!/usr/bin/env python3
"""check_critical_path.py REPORT.json STAGES|- [--pinned]: checks `gotrace report --critical-path
--json` of tests/cli/critical_chain against the stage durations the program measured (STAGES).

- every breakdown, the segments and each segment's functions add up exactly to the interval,
  and the segments tile it;
- each stage's share of the path (its thread's row) lies within 5% + 5 ms of its own figure;
- the decoy thread is not on the path;
- --pinned (kernel records): stage-b's running time is its CPU time and its runnable time the
  rest of its stage, within 5% + 5 ms, and the decoy held its CPU part of that runnable time,
  never longer than the decoy ran (other processes of the machine hold it too).
STAGES "-": the sums only.  Prints what is wrong and exits 1, or exits 0."""
import json
import sys

MS = 1000000


def close(got, want):
    return abs(got - want) <= 0.05 * want + 5 * MS


def main():
    cp = json.load(open(sys.argv[1]))["critical_path"]
    stages = {}
    if sys.argv[2] != "-":
        stages = {k: int(v) for k, v in (line.split() for line in open(sys.argv[2]) if line.strip())}
    pinned = "--pinned" in sys.argv[3:]
    errors = []
    total = cp["end_ns"] - cp["start_ns"]
    if cp["ns"] != total:
        errors.append(f"ns {cp['ns']} is not end - start {total}")
    for key in ("by_state", "by_thread", "by_function", "by_lock", "by_syscall"):
        s = sum(row["ns"] for row in cp[key])
        if s != total:
            errors.append(f"{key} adds up to {s}, not {total}")
    at = cp["start_ns"]
    for seg in cp["segments"]:
        if seg["start_ns"] != at:
            errors.append(f"segment at {seg['start_ns']} does not follow the previous one's end {at}")
            break
        at += seg["ns"]
        if sum(f["ns"] for f in seg["functions"]) not in (0, seg["ns"]):
            errors.append(f"segment at {seg['start_ns']}: functions do not add up to {seg['ns']}")
    if at != cp["end_ns"]:
        errors.append(f"segments end at {at}, not {cp['end_ns']}")

    def share(name, state=None):
        return sum(s["ns"] for s in cp["segments"]
                   if s["thread"] == name and (state is None or s["state"] == state))

    for stage in ("stage-a", "stage-b", "stage-c") if stages else ():
        got, want = share(stage), stages[stage]
        if not close(got, want):
            errors.append(f"{stage}: {got / MS:.3f} ms on the path, {want / MS:.3f} ms measured")
    decoy_rows = [row for row in cp["by_thread"] if row["name"].startswith("decoy (")]
    if stages and (share("decoy") or decoy_rows):
        errors.append("the decoy is on the path")
    if pinned:
        running, runnable = share("stage-b", "running"), share("stage-b", "runnable")
        cpu, wall = stages["stage-b-cpu"], stages["stage-b"]
        if not close(running, cpu):
            errors.append(f"stage-b running {running / MS:.3f} ms, its CPU time {cpu / MS:.3f} ms")
        if abs(runnable - (wall - cpu)) > 0.05 * wall + 5 * MS:
            errors.append(f"stage-b runnable {runnable / MS:.3f} ms, its stage less its CPU time "
                          f"{(wall - cpu) / MS:.3f} ms")
        held = sum(s["ns"] for s in cp["segments"] if s["thread"] == "stage-b" and
                   s["state"] == "runnable" and s.get("cpu_held_by_tid") == stages["decoy-tid"])
        if not 0 < held <= stages["decoy-cpu"] + 5 * MS:
            errors.append(f"the decoy held stage-b's CPU {held / MS:.3f} ms of its "
                          f"{runnable / MS:.3f} ms runnable, and ran "
                          f"{stages['decoy-cpu'] / MS:.3f} ms")
    for e in errors:
        print(e)
    sys.exit(1 if errors else 0)


main()
