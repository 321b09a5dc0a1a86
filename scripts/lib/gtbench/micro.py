"""Part 1: the floor of one fact and the cost of the hooks' fast paths (bench/microbench),
in ns per call and in callgrind's instructions per call."""
import os
import re
import subprocess

from .run import BenchError, clean_env, count_facts, measure, median, run_checked, say


# The uncontended pairs (bench/microbench.c) in the shapes around them, as (microbench's
# operation, the function that holds the pair alone): a mutex's lock+unlock with nobody
# blocked, a thread blocked on another mutex, two on a condition variable, and right after
# this thread slept on the same mutex; a rwlock's write lock+unlock and a semaphore's
# post+wait, alone and while a thread is blocked on another one.
PAIR_SHAPES = {"mutex": ("mutex", "bench_pair"), "mutexwait": ("mutex-mutexwait", "bench_pair"),
               "condwait": ("mutex-condwait", "bench_pair"),
               "handoff": ("mutex-handoff", "bench_pair"),
               "rwlock": ("rwlock", "bench_rwlock_pair"),
               "rwlockwait": ("rwlock-rwlockwait", "bench_rwlock_pair"),
               "sem": ("sem", "bench_sem_pair"), "semwait": ("sem-semwait", "bench_sem_pair")}


def microbench(paths, reps, quick, work):
    mb, stub, pre, count = paths["microbench"], paths["stub"], paths["preload"], paths["count"]
    n_fast = 2_000_000 if quick else 5_000_000
    n_fact = 200_000 if quick else 500_000
    n_unw = 50_000 if quick else 200_000
    n_read = 100_000 if quick else 300_000
    capdir = os.path.join(work, "micro-captures")
    os.makedirs(capdir)
    base = clean_env()

    def run(op, calls, preload=None, stacks=None, facts=None, locks=None):
        env = dict(base, TMPDIR=work)
        if preload:
            env["LD_PRELOAD"] = preload
            env["GOTRACE_CAPTURE_DIR"] = capdir
            if stacks:
                env["GOTRACE_STACKS"] = stacks
                env["GOTRACE_STACK_DEPTH"] = "16"
            if locks:
                env["GOTRACE_LOCKS"] = locks
        out = run_checked([mb, op, str(calls)], f"microbench {op}", env=env).split()
        ns, made = float(out[0]), int(out[1])
        n_facts = None
        caps = [os.path.join(capdir, f) for f in os.listdir(capdir)]
        if facts:
            if len(caps) != 1:
                raise BenchError(f"microbench {op} under libgotrace.so left {len(caps)} captures")
            kinds = count_facts(count, caps[0])
            n_facts = sum(kinds.get(k, (0, 0))[0] for k in facts)
        for cap in caps:
            os.unlink(cap)
        if facts:
            if not n_facts:
                raise BenchError(f"microbench {op} under libgotrace.so recorded no {'/'.join(facts)} facts")
        return ns, made, n_facts

    rows = {k: [] for k in ("rdtsc", "rdtscp", "rseq", "getcpu", "reserve", "unw16", "unw32",
                            *(f"{shape}_{x}" for shape in PAIR_SHAPES for x in ("u", "t", "ratio")),
                            "none", "fp", "unwind", "none_floor", "fp_floor", "unwind_unw",
                            "unwind_new", "unwind_new_unw",
                            *(f"lockall_{op}_{st}" for op in ("mutex", "rwlock")
                              for st in ("none", "unwind")),
                            "read_none", "read_unwind", "read_fact_none",
                            "readreal_none", "readreal_unwind", "readreal_base",
                            "start_wall", "start_cpu", "start_added_wall", "start_added_cpu")}
    both = f"{pre} {stub}"
    for rep in range(reps):
        say(f"microbenchmark, repetition {rep + 1}/{reps}")
        for op in ("rdtsc", "rdtscp", "rseq", "getcpu"):
            rows[op].append(run(op, n_fast)[0])
        floor = run("reserve", n_fast)[0]
        rows["reserve"].append(floor)
        unw16 = run("unw16", n_unw)[0]
        rows["unw16"].append(unw16)
        rows["unw32"].append(run("unw32", n_unw)[0])
        # the uncontended pairs in each shape: same binary, without and with the preload
        for shape, (op, _) in PAIR_SHAPES.items():
            calls = n_fast if op != "mutex-handoff" else n_fact
            mu = run(op, calls)[0]
            mt = run(op, calls, preload=pre, stacks="none")[0]
            rows[shape + "_u"].append(mu)
            rows[shape + "_t"].append(mt)
            rows[shape + "_ratio"].append(mt / mu)
        # --locks=all: an uncontended pair's two facts (acquisition with its stack, release),
        # added to the untraced pair
        for op in ("mutex", "rwlock"):
            mu = rows[op + "_u"][-1]
            for st in ("none", "unwind"):
                mt = run(op, n_fact, preload=pre, stacks=st, locks="all",
                         facts=["lock_acquire", "lock_release"])[0]
                rows[f"lockall_{op}_{st}"].append(mt - mu)
        # one fact: sched_yield answered by the stub, traced minus stub alone, per fact
        for stacks in ("none", "fp", "unwind"):
            b = run("yield-stub", n_fact, preload=stub)[0]
            t, made, n = run("yield-stub", n_fact, preload=both, stacks=stacks, facts=["yield"])
            added = (t - b) * made / n
            rows[stacks].append(added)
        rows["none_floor"].append(rows["none"][-1] / floor)
        rows["fp_floor"].append(rows["fp"][-1] / floor)
        rows["unwind_unw"].append(rows["unwind"][-1] / unw16)
        # a stack that differs from the last two walked from its place: the walk itself
        b = run("yield-stub-new", n_fact, preload=stub)[0]
        t, made, n = run("yield-stub-new", n_fact, preload=both, stacks="unwind", facts=["yield"])
        rows["unwind_new"].append((t - b) * made / n)
        rows["unwind_new_unw"].append(rows["unwind_new"][-1] / unw16)
        # a syscall's two facts, on the stub fd (no kernel) and on /dev/zero (real reads)
        for stacks in ("none", "unwind"):
            b = run("read-stub", n_fact, preload=stub)[0]
            t, made, n = run("read-stub", n_fact, preload=both, stacks=stacks,
                             facts=["syscall_begin", "syscall_end"])
            rows["read_" + stacks].append(t - b)
            if stacks == "none":
                rows["read_fact_none"].append((t - b) * made / n)
            b = run("read", n_read)[0]
            t = run("read", n_read, preload=pre, stacks=stacks, facts=["syscall_begin"])[0]
            rows["readreal_" + stacks].append(t - b)
            rows["readreal_base"].append(b)
        # what a process pays once: start and exit of a program that does nothing
        u = measure([mb, "rdtsc", "5"], base, "microbench rdtsc 5")
        t = measure([mb, "rdtsc", "5"], base, "microbench rdtsc 5 under libgotrace.so",
                    program_env={"LD_PRELOAD": pre, "GOTRACE_CAPTURE_DIR": capdir})
        for f in os.listdir(capdir):
            os.unlink(os.path.join(capdir, f))
        rows["start_wall"].append(u.wall)
        rows["start_cpu"].append(u.cpu)
        rows["start_added_wall"].append(t.wall - u.wall)
        rows["start_added_cpu"].append(t.cpu - u.cpu)
    return {k: median(v) for k, v in rows.items()}


def instructions(paths, work, quick):
    """Instructions per call counted by callgrind: unlike time, the same on every run of a
    shared machine.  Two runs of different lengths cancel what start-up costs."""
    capdir = os.path.join(work, "cg-captures")
    os.makedirs(capdir, exist_ok=True)
    base = clean_env()

    def per_call(op, small, big, preload=None, stacks=None):
        totals = []
        for calls in (small, big):
            env = dict(base, TMPDIR=work)
            if preload:
                env.update(LD_PRELOAD=preload, GOTRACE_CAPTURE_DIR=capdir)
                if stacks:
                    env.update(GOTRACE_STACKS=stacks, GOTRACE_STACK_DEPTH="16")
            r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                paths["microbench"], op, str(calls)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            m = re.search(r"I\s+refs:\s+([\d,]+)", r.stderr)
            if r.returncode != 0 or not m:
                raise BenchError(f"callgrind of microbench {op}: {r.stderr.strip()[-200:]}")
            totals.append((int(r.stdout.split()[1]), int(m.group(1).replace(",", ""))))
            for f in os.listdir(capdir):
                os.unlink(os.path.join(capdir, f))
        (c0, i0), (c1, i1) = totals
        return (i1 - i0) / (c1 - c0)

    def per_pair(op, fn, calls, preload=None):
        """Instructions inside fn alone (callgrind --toggle-collect), per pair."""
        env = dict(base, TMPDIR=work)
        if preload:
            env.update(LD_PRELOAD=preload, GOTRACE_CAPTURE_DIR=capdir, GOTRACE_STACKS="none")
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                            "--collect-atstart=no", f"--toggle-collect={fn}",
                            paths["microbench"], op, str(calls)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        m = re.search(r"I\s+refs:\s+([\d,]+)", r.stderr)
        for f in os.listdir(capdir):
            os.unlink(os.path.join(capdir, f))
        if r.returncode != 0 or not m or not int(m.group(1).replace(",", "")):
            raise BenchError(f"callgrind of microbench {op}: {r.stderr.strip()[-200:]}")
        return int(m.group(1).replace(",", "")) / int(r.stdout.split()[1])

    say("instruction counts (callgrind)")
    k = 1 if quick else 2
    pre, stub = paths["preload"], paths["stub"]
    both = f"{pre} {stub}"
    ic = {"reserve": per_call("reserve", 10000 * k, 60000 * k),
          "unw16": per_call("unw16", 2000 * k, 12000 * k),
          "unw32": per_call("unw32", 2000 * k, 12000 * k)}
    for shape, (op, fn) in PAIR_SHAPES.items():
        ic[shape + "_u"] = per_pair(op, fn, 10000 * k)
        ic[shape + "_t"] = per_pair(op, fn, 10000 * k, pre)
    stub_only = per_call("yield-stub", 5000 * k, 30000 * k, stub)
    for stacks in ("none", "fp", "unwind"):
        ic["fact_" + stacks] = per_call("yield-stub", 2000 * k, 12000 * k, both, stacks) - stub_only
    ic["fact_unwind_new"] = (per_call("yield-stub-new", 2000 * k, 12000 * k, both, "unwind") -
                             per_call("yield-stub-new", 5000 * k, 30000 * k, stub))
    return ic
