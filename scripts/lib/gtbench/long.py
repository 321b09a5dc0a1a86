"""The long run (--long): a high-rate workload's capture, conversion and what Go's viewers
need to open its trace, without and with the flight recorder; its rows of the table."""
import os
import re
import subprocess

from .run import ROOT, BenchError, clean_env, count_facts, measure, say
from .table import verdict


# the window configurations of the long run: (label, GOTRACE_LAST or None)
LONG_CONFIGS = (("everything", None), ("--last 2s", "2s"), ("--last 64M", "64M"))
# what Go's viewers needed per million events (docs/benchmarks.md, "Traces a viewer can
# open"): a trace that would need more than half of the available memory is not opened
VIEWER_GIB_PER_M_EVENTS = 0.5
LONG_GOS = ("1.23", "1.26")


def viewer_tools():
    """{version: path of its `trace` tool} for LONG_GOS, those installed (scripts/lib/go-toolchains)."""
    tools = {}
    for v in LONG_GOS:
        r = subprocess.run(["bash", "-c", 'source "$1"; go=$(gt_go_command "$2") && '
                            'GOTOOLCHAIN=local "$go" env GOTOOLDIR',
                            "-", os.path.join(ROOT, "scripts", "lib", "go-toolchains"), v],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        tool = os.path.join(r.stdout.strip(), "trace")
        if r.returncode == 0 and os.access(tool, os.X_OK):
            tools[v] = tool
    return tools


def load_viewer_load():
    """bench/viewer-load as a module: its measure() opens a trace as a browser would."""
    from importlib.machinery import SourceFileLoader
    return SourceFileLoader("viewer_load", os.path.join(ROOT, "bench", "viewer-load")).load_module()


def available_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    return float("nan")


def long_run(paths, seconds, work):
    """bench/workload pipe for `seconds` under libgotrace.so (stacks none, the highest fact
    rate), keeping everything and with the flight recorder; each capture measured on disk,
    counted, converted, and its trace opened by Go's viewers."""
    wl, pre, count, gotrace = paths["workload"], paths["preload"], paths["count"], paths["gotrace"]
    base = clean_env()
    capdir = os.path.join(work, "long-captures")
    os.makedirs(capdir)

    viewer = load_viewer_load()
    tools = viewer_tools()
    results = []
    for label, last in LONG_CONFIGS:
        say(f"long run, {label}: workload pipe for {seconds} s, stacks none")
        penv = {"LD_PRELOAD": pre, "GOTRACE_CAPTURE_DIR": capdir, "GOTRACE_STACKS": "none"}
        if last:
            penv["GOTRACE_LAST"] = last
        # as many round trips as fit in `seconds`
        r = measure([wl, "pipe", str(10**15), str(seconds)], base, "workload pipe traced", None, penv)
        caps = [os.path.join(capdir, f) for f in os.listdir(capdir) if f.endswith(".gtcap")]
        if len(caps) != 1:
            raise BenchError(f"workload pipe under libgotrace.so left {len(caps)} captures")
        cap = caps[0]
        st = os.stat(cap)
        t = count_facts(count, cap)["total"]
        res = {"label": label, "wall": r.wall, "cpu": r.cpu, "rss_kb": r.rss_kb,
               "round_trips": int(r.stdout.split()[1]),
               "disk": st.st_blocks * 512, "size": st.st_size, "facts": t[0], "rec_bytes": t[1]}
        say(f"long run, {label}: converting a {st.st_blocks * 512 / 2**20:,.0f} MiB capture")
        trace = os.path.join(work, "long.trace")
        c = measure([gotrace, "convert", cap, "-o", trace], base, "gotrace convert")
        os.unlink(cap)
        m = re.search(r"(\d+) facts, (\d+) events written", c.stderr)
        if not m:
            raise BenchError(f"cannot read the summary of gotrace convert: {c.stderr.strip()[:200]}")
        res.update(conv_wall=c.wall, conv_cpu=c.cpu, conv_rss_kb=c.rss_kb,
                   conv_facts=int(m.group(1)), events=int(m.group(2)),
                   trace_bytes=os.path.getsize(trace), viewers={})
        need = res["events"] / 1e6 * VIEWER_GIB_PER_M_EVENTS
        for v, tool in tools.items():
            avail = available_gib()
            if need > avail / 2:
                res["viewers"][v] = (f"not opened: {res['events'] / 1e6:.1f} M events would need"
                                     f" ~{need:.0f} GiB, half the available {avail:.0f} GiB is less")
                continue
            say(f"long run, {label}: Go {v}'s viewer opens the trace")
            ok, secs, vcpu, rss = viewer.measure(tool, trace)
            res["viewers"][v] = (f"{'opened' if ok else 'FAILED'} in {secs:.1f} s ({vcpu:.1f} s CPU),"
                                 f" peak RSS {rss / 2**30:.2f} GiB")
        os.unlink(trace)
        res["load"] = os.getloadavg()[0]
        results.append(res)
    for v in LONG_GOS:
        if v not in tools:
            for res in results:
                res["viewers"][v] = "not installed (scripts/setup installs it)"
    return {"seconds": seconds, "configs": results}


def long_rows(lr):
    rows = []
    s = f"long run: workload pipe for {lr['seconds']} s, stacks none"
    for res in lr["configs"]:
        what = res["label"]
        rows.append((s, f"{what}: traced run", f"{res['round_trips']:,} round trips,"
                     f" wall {res['wall']:.1f} s, CPU {res['cpu']:.1f} s,"
                     f" RSS {res['rss_kb'] / 1024:.1f} MiB, load average {res['load']:.1f}", "", ""))
        rows.append((s, f"{what}: capture on disk (du), facts, bytes per fact (records / file)",
                     f"{res['disk'] / 2**20:,.1f} MiB, {res['facts']:,} facts,"
                     f" {res['rec_bytes'] / res['facts']:.1f} / {res['size'] / res['facts']:.1f} B",
                     "<= 16 B (records)", verdict(res["rec_bytes"] / res["facts"] <= 16)))
        rows.append((s, f"{what}: gotrace convert", f"wall {res['conv_wall']:.1f} s,"
                     f" CPU {res['conv_cpu']:.1f} s, peak RSS {res['conv_rss_kb'] / 1024:.0f} MiB", "", ""))
        rows.append((s, f"{what}: trace", f"{res['trace_bytes'] / 2**20:,.1f} MiB,"
                     f" {res['events']:,} events", "", ""))
        for v, fig in sorted(res["viewers"].items()):
            rows.append((s, f"{what}: Go {v}'s viewer opens it", fig, "", ""))
    return rows
