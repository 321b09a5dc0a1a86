#!/usr/bin/env python3
"""Checks `gotrace report --json` of examples/workpool (stdin) and prints "ok" or why not.

usage: check_report_json.py LOCK_LINE [--holds JOBS]
  LOCK_LINE  the line of pthread_mutex_lock(&totals_lock)
  --holds    traced with --locks=all, JOBS jobs: the hold times too; without it, "holds" is null
"""
import json
import sys

lock_line = int(sys.argv[1])
holds_jobs = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--holds" else None
try:
    report = json.load(sys.stdin)
except ValueError as e:
    sys.exit("not JSON: %s" % e)

problems = []
threads = report.get("threads", [])
workers = [t for t in threads if t.get("start_routine") == "worker_main"]
if sorted(t.get("name") for t in workers) != ["worker-1", "worker-2", "worker-3", "worker-4"]:
    problems.append("workers by start routine: %r" % [(t.get("name"), t.get("start_routine")) for t in threads])
for routine, name in (("producer_main", "producer"), ("logger_main", "logger")):
    if not any(t.get("start_routine") == routine and t.get("name") == name for t in threads):
        problems.append("no thread %s started at %s" % (name, routine))
if sum(t.get("lock_ns", 0) for t in workers) <= 0:
    problems.append("workers never waited for a lock")
if not any(t.get("syscall_ns", 0) > 0 for t in threads if t.get("name") == "logger"):
    problems.append("the logger spent no time in syscalls (read on the pipe)")


def frames_at(obj, func, line=None):
    for st in obj.get("stacks", []):
        for f in st.get("frames", []):
            if f.get("func") == func and f.get("file", "").endswith("workpool.c") and \
                    (line is None or f.get("line") == line):
                return st
    return None


totals = [o for o in report.get("objects", []) if o.get("kind") == "mutex" and frames_at(o, "record_result", lock_line)]
if not totals:
    problems.append("no contended mutex blocked at record_result (workpool.c:%d): %r" % (
        lock_line, [(o.get("kind"), o.get("address"), o.get("waits")) for o in report.get("objects", [])]))
else:
    o = totals[0]
    if not (o["waits"] > 0 and o["total_ns"] >= o["max_ns"] > 0 and o["mean_ns"] * o["waits"] <= o["total_ns"]):
        problems.append("inconsistent counters: %r" % {k: o[k] for k in ("waits", "total_ns", "mean_ns", "max_ns")})
    st = frames_at(o, "record_result", lock_line)
    if not any(f.get("func") == "worker_main" for f in st["frames"]):
        problems.append("the blocking stack does not reach worker_main: %r" % st["frames"])
if not any(o.get("kind") == "condvar" and frames_at(o, "queue_pop") for o in report.get("objects", [])):
    problems.append("no condvar wait in queue_pop")
if not any(s.get("syscall") == "read" and s.get("fd_kind") == "pipe" for s in report.get("syscalls", [])):
    problems.append("no read on the pipe among the syscalls: %r" % [s.get("syscall") for s in report.get("syscalls", [])])


def check_holds(holds, jobs):
    """The hold times of --locks=all: consistent counters; totals_lock taken once per job at
    record_result, by the workers; queue.lock taken back by the workers' condition waits."""
    found = []
    if holds is None:
        return ["no \"holds\" with --locks=all"]
    locks = {lock.get("name"): lock for lock in holds.get("locks", [])}
    for lock in holds.get("locks", []):
        n, acquired = lock["holds"], lock["acquisitions"]
        if not (0 <= lock["waited"] <= acquired and n <= acquired and lock["max_ns"] <= lock["total_ns"]
                and lock["mean_ns"] * n <= lock["total_ns"]
                and abs(lock["contended_share"] - (lock["waited"] / acquired if acquired else 0)) < 1e-5
                and sum(s["holds"] for s in lock["sites"]) <= n
                and sum(h["holds"] for h in lock["holders"]) <= n):
            found.append("inconsistent hold counters: %r" % {k: v for k, v in lock.items() if k not in ("sites", "holders")})
    totals = locks.get("totals_lock")
    if totals is None:
        return found + ["totals_lock not among the held locks: %r" % sorted(locks)]
    if totals["acquisitions"] != jobs or totals["holds"] != jobs or totals["unmatched_releases"] != 0:
        found.append("totals_lock: %d acquisitions, %d holds for %d jobs" % (totals["acquisitions"], totals["holds"], jobs))
    if not frames_at({"stacks": totals["sites"][:1]}, "record_result", lock_line):
        found.append("totals_lock's top hold site is not record_result:%d: %r" % (lock_line, totals["sites"][:1]))
    if not all(h["name"].startswith("worker-") for h in totals["holders"]):
        found.append("totals_lock held by others than the workers: %r" % totals["holders"])
    queue = locks.get("queue.lock")
    if queue is None or queue["cond_retakes"] <= 0:
        found.append("queue.lock never taken back by a condition wait: %r" % queue)
    return found


if holds_jobs is not None:
    problems += check_holds(report.get("holds"), holds_jobs)
elif report.get("holds", "absent") is not None:
    problems.append("hold times without --locks=all: %r" % report.get("holds", "absent"))
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("ok")
