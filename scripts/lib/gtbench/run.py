"""Running one program and measuring it: wall and CPU time, peak RSS, facts in a capture;
the helpers every part of scripts/bench uses."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

# this file is scripts/lib/gtbench/run.py
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class BenchError(Exception):
    """Something could not run at all: reported in one line, exit status 1."""


STARTED = time.monotonic()


def say(msg):
    t = time.monotonic() - STARTED
    print(f"bench: [{int(t // 60)}:{int(t % 60):02d}] {msg}", file=sys.stderr, flush=True)


def run_checked(cmd, what, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise BenchError(f"{what} failed (status {r.returncode}): {' | '.join(tail)}")
    return r.stdout


def median(xs):
    return statistics.median(xs) if xs else float("nan")


class Result:
    def __init__(self, wall, cpu, rss_kb, stdout, stderr):
        self.wall, self.cpu, self.rss_kb = wall, cpu, rss_kb
        self.stdout, self.stderr = stdout, stderr


def measure(cmd, env, what, stdout_path=None, program_env=None):
    """Runs cmd; wall seconds, CPU seconds (user + system of the program and of what it
    waited for, from wait4, in microseconds) and the program's peak RSS (from /usr/bin/time:
    wait4 would report this Python process's RSS, which a forked child inherits as its peak).
    A failing program is an error: its figures would mean nothing.  program_env goes to the
    program only (through env(1), which execs it), not to /usr/bin/time."""
    if program_env:
        cmd = ["env"] + [f"{k}={v}" for k, v in program_env.items()] + cmd
    out = open(stdout_path, "wb") if stdout_path else subprocess.PIPE
    with tempfile.NamedTemporaryFile(mode="r") as usage, tempfile.TemporaryFile() as err:
        try:
            t0 = time.perf_counter()
            p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", usage.name] + cmd,
                                 env=env, stdout=out, stderr=err)
            data = p.stdout.read() if not stdout_path else b""
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.perf_counter() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
        finally:
            if stdout_path:
                out.close()
        err.seek(0)
        errtext = err.read().decode(errors="replace")
        if p.returncode != 0:
            tail = errtext.strip().splitlines()[-3:]
            raise BenchError(f"{what}: status {p.returncode}: {' | '.join(tail)}")
        rss_kb = int(usage.read().split()[-1])
    return Result(wall, ru.ru_utime + ru.ru_stime, rss_kb, data.decode(errors="replace"), errtext)


def clean_env():
    """This environment without anything that would trace or preload the programs."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("GOTRACE_", "LD_PRELOAD"))}


def count_facts(count_tool, capture):
    """{type: (records, bytes)} and 'total': (records, bytes, file bytes)."""
    kinds = {}
    for line in run_checked([count_tool, capture], f"count_facts {capture}").splitlines():
        parts = line.split()
        kinds[parts[0]] = tuple(int(x) for x in parts[1:])
    return kinds
