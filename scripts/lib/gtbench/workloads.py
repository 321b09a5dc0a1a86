"""Parts 2-4: small workloads, pigz and zstd untraced and under every peer (gotrace per stack
mode, LTTng-UST, strace -f, drd), and the conversion of one capture per workload."""
import os
import re
import shutil

from .lttng import Lttng
from .run import BenchError, clean_env, count_facts, measure, median, run_checked, say


GOTRACE_CONFIGS = ("none", "fp", "unwind")

# What each workload stands for, one line each, in the order they run (docs/benchmarks.md
# prints them above the table).
WORKLOAD_ROLES = {
    "mutex (4 threads, one lock)":
        "a hot lock; 4 threads spend as long inside one critical section as outside it, so"
        " most lock calls contend",
    "mutex (16 threads, one lock)":
        "the same hot lock with far more threads than CPUs, most of them blocked on it while"
        " the others lock and unlock",
    "condvar ping-pong":
        "a hand-off through a condition variable, every step a wait and a wake with no work"
        " between",
    "pipe ping-pong":
        "request and reply over blocking I/O, one byte each way between two threads, mostly"
        " system calls and wake-ups",
    "thread churn": "a thread per task, short-lived threads created and joined one after another",
    "server (8 workers, 2 producers)":
        "a thread pool, more workers than CPUs taking jobs from one queue (a mutex, not_empty"
        " and not_full condition variables) with short critical sections and a little work per"
        " job, so some threads are always blocked",
    "parked threads (5000 live, 256 KiB stacks)":
        "what a live thread costs in memory (its RSS row): thousands of threads alive at once,"
        " each blocked on a condition variable, one fact with a stack each; short in time",
    "pigz -p 2": "a real program that mostly computes (compression), with few synchronisation calls",
    "zstd -T2 -6": "another real compressor, with its own threading design and more memory",
}


def workloads(paths, reps, quick, work, lttng):
    wl, pre, count, gotrace = paths["workload"], paths["preload"], paths["count"], paths["gotrace"]
    mib = 20 if quick else 100
    data = os.path.join(work, "input.bin")
    say(f"generating {mib} MiB of mixed text and random bytes")
    run_checked([paths["gendata"], data, str(mib)], "gendata")
    # each runs 0.5 to 1.5 s untraced (full runs, 2 CPUs): a fixed amount of work, so the
    # configurations of one repetition do the same; the small ones print their result
    small = {
        "mutex (4 threads, one lock)": ([wl, "mutex", "300000" if quick else "1500000", "4"], True),
        "mutex (16 threads, one lock)": ([wl, "mutex", "80000" if quick else "400000", "16"], True),
        "condvar ping-pong": ([wl, "condvar", "16000" if quick else "80000"], True),
        "pipe ping-pong": ([wl, "pipe", "20000" if quick else "100000"], True),
        "thread churn": ([wl, "churn", "3600" if quick else "18000"], True),
        "server (8 workers, 2 producers)":
            ([wl, "server", "48000" if quick else "240000", "8"], True),
        "parked threads (5000 live, 256 KiB stacks)":
            ([wl, "parked", "1000" if quick else "5000"], True),
        "pigz -p 2": (["pigz", "-p", "2", "-c", data], False),
        "zstd -T2 -6": (["zstd", "-q", "-T2", "-6", "-c", data], False),
    }
    if list(small) != list(WORKLOAD_ROLES):
        raise BenchError("gtbench/workloads.py: WORKLOAD_ROLES does not name the workloads")
    # drd slows the lock workloads 60x (90 s a repetition): it runs on the three others only
    with_drd = ("condvar ping-pong", "pipe ping-pong", "thread churn")
    base = clean_env()
    configs = ["untraced"] + [f"gotrace {s}" for s in GOTRACE_CONFIGS] + ["lttng-ust", "strace -f", "drd"]
    results = {}
    for name, (cmd, is_small) in small.items():
        cfgs = [c for c in configs if c != "drd" or name in with_drd]
        per = {c: {"wall": [], "cpu": [], "rss": [], "facts": [], "ratio": [], "cpu_ratio": [],
                   "added_ns": [], "rec_bytes": [], "file_bytes": [], "vs_lttng": [],
                   "vs_strace": []} for c in cfgs}
        outputs_differ = []
        last_capture = None
        for rep in range(reps):
            say(f"{name}, repetition {rep + 1}/{reps}")
            reference = None
            for cfg in cfgs:
                penv, prefix, capdir = {}, [], None
                if cfg.startswith("gotrace"):
                    capdir = os.path.join(work, "cap", f"{len(results)}-{cfg.split()[1]}-{rep}")
                    os.makedirs(capdir)
                    penv = {"LD_PRELOAD": pre, "GOTRACE_CAPTURE_DIR": capdir,
                            "GOTRACE_STACKS": cfg.split()[1]}
                elif cfg == "lttng-ust":
                    penv = {"LD_PRELOAD": Lttng.WRAPPER, "LTTNG_HOME": lttng.home}
                elif cfg == "strace -f":
                    prefix = ["strace", "-f", "-o", "/dev/null"]
                elif cfg == "drd":
                    prefix = ["valgrind", "-q", "--tool=drd"]
                out_path = None if is_small else os.path.join(work, f"out-{cfg.replace(' ', '_')}")
                r = measure(prefix + cmd, base, f"{name} under {cfg}", out_path, penv)
                output = r.stdout if is_small else open(out_path, "rb").read()
                if reference is None:
                    reference = output
                elif output != reference and cfg not in outputs_differ:
                    outputs_differ.append(cfg)
                p = per[cfg]
                p["wall"].append(r.wall)
                p["cpu"].append(r.cpu)
                p["rss"].append(r.rss_kb)
                if capdir:
                    caps = [os.path.join(capdir, f) for f in os.listdir(capdir) if f.endswith(".gtcap")]
                    if not caps:
                        raise BenchError(f"{name} under {cfg} left no capture in {capdir}")
                    facts = rec_bytes = file_bytes = 0
                    for cap in caps:
                        t = count_facts(count, cap)["total"]
                        facts, rec_bytes, file_bytes = facts + t[0], rec_bytes + t[1], file_bytes + t[2]
                    p["facts"].append(facts)
                    p["rec_bytes"].append(rec_bytes / facts)
                    p["file_bytes"].append(file_bytes / facts)
                    if cfg == "gotrace unwind" and rep == reps - 1 and len(caps) == 1:
                        last_capture = caps[0]
                    else:
                        shutil.rmtree(capdir)
            u = per["untraced"]
            for cfg in cfgs[1:]:
                p = per[cfg]
                p["ratio"].append(p["wall"][-1] / u["wall"][-1])
                p["cpu_ratio"].append(p["cpu"][-1] / u["cpu"][-1])
                if p["facts"]:
                    p["added_ns"].append((p["cpu"][-1] - u["cpu"][-1]) * 1e9 / p["facts"][-1])
            # judged on CPU time: on this shared machine wall time mostly measures the others
            none = per["gotrace none"]
            none["vs_lttng"].append(none["cpu"][-1] / per["lttng-ust"]["cpu"][-1])
            added_none = none["cpu"][-1] - u["cpu"][-1]
            added_strace = per["strace -f"]["cpu"][-1] - u["cpu"][-1]
            none["vs_strace"].append(added_strace / added_none if added_none > 0 else float("inf"))
        conv = convert(gotrace, last_capture, work) if last_capture else None
        # the spread of the repetitions: each figure's (and ratio's) smallest and largest
        results[name] = {"per": {c: {k: median(v) for k, v in d.items()} for c, d in per.items()},
                         "min": {c: {k: min(v, default=float("nan")) for k, v in d.items()}
                                 for c, d in per.items()},
                         "max": {c: {k: max(v, default=float("nan")) for k, v in d.items()}
                                 for c, d in per.items()},
                         "reps": reps, "differ": outputs_differ, "convert": conv, "configs": cfgs}
    return results


def convert(gotrace, capture, work):
    """Converts one capture (with symbols), timed on its own; figures from its summary."""
    trace = os.path.join(work, "workload.trace")
    r = measure([gotrace, "convert", capture, "-o", trace], clean_env(), "gotrace convert")
    summary = r.stderr
    m = re.search(r"(\d+) facts, (\d+) events written.*?, ([\d.]+) s \(([\d.]+) s CPU\)", summary)
    if not m:
        raise BenchError(f"cannot read the summary of gotrace convert: {summary.strip()[:200]}")
    facts, events, cpu = int(m.group(1)), int(m.group(2)), float(m.group(4))
    tbytes = os.path.getsize(trace)
    os.unlink(trace)
    return {"wall": r.wall, "cpu": cpu, "rss_kb": r.rss_kb, "facts": facts, "events": events,
            "trace_bytes": tbytes, "facts_per_s": facts / cpu if cpu > 0 else float("inf")}
