#!/usr/bin/env python3
"""Checks `gotrace report --json` of examples/workpool (stdin) and prints "ok" or why not.

usage: check_report_json.py LOCK_LINE    (the line of pthread_mutex_lock(&totals_lock))
"""
import json
import sys

lock_line = int(sys.argv[1])
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
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("ok")
