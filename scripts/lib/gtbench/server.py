"""Part 6: a loopback request/response server (bench/reqserver) under `gotrace run`, its
throughput against the untraced server's (issue 27, item 4), and its rows of the table."""
import os
import re
import subprocess

from .run import BenchError, clean_env, median, say


# the server's shape: one event loop (as redis), 8 connections from one client thread (as
# redis-benchmark), one request in flight on each: the loop sleeps and wakes tens of
# thousands of times a second, which is what a server's context switches look like
CONNS, LOOPS = 8, 1
SERVER_CONFIGS = (
    ("hooks only (--kernel=off)", ["--kernel=off"]),
    ("the default (no options)", []),
    ("kernel records (--kernel=on)", ["--kernel=on"]),
    ("switches alone (--kernel=on --cpu-samples off)", ["--kernel=on", "--cpu-samples", "off"]),
)
RATE_RE = re.compile(r"(\d+) requests on \d+ connections in ([0-9.]+) s: \d+ requests/s, sum (\w+)")
SERVED_RE = re.compile(r"served (\d+) requests on \d+ connections, sum (\w+), CPU ([0-9.]+) s")


def serve_once(reqserver, prefix, requests, env, what):
    """Starts the server (under prefix), loads it from an untraced client; requests/s as the
    client saw them, the server's CPU seconds per request, whether both sides agree on what
    was answered, and the server's stderr."""
    server = subprocess.Popen(prefix + [reqserver, "serve", str(CONNS), str(LOOPS)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline()
        if not first.startswith("port "):
            raise BenchError(f"{what}: the server printed no port: {first!r}")
        client = subprocess.run([reqserver, "load", first.split()[1], str(CONNS), str(requests)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, timeout=600)
        out, err = server.communicate(timeout=600)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    m, s = RATE_RE.search(client.stdout), SERVED_RE.search(out)
    if client.returncode != 0 or server.returncode != 0 or not m or not s:
        raise BenchError(f"{what}: status {client.returncode}/{server.returncode}:"
                         f" {(client.stderr + err).strip()[-300:]}")
    agree = int(m.group(1)) == int(s.group(1)) == requests and m.group(3) == s.group(2)
    return int(m.group(1)) / float(m.group(2)), float(s.group(3)) / requests, agree, err


# repetitions at least (but with --quick): a loopback server's rate varies by a third from
# run to run on a shared machine (where the scheduler puts the client), and the verdict is a
# median of ratios that must tell 0.95 from 0.94
SERVER_REPS_MIN = 7


def server_costs(paths, reps, quick, work):
    """Throughput of the untraced server and under each configuration, as ratios taken
    within one repetition."""
    reqserver, gotrace = paths["reqserver"], paths["gotrace"]
    if not quick:
        reps = max(reps, SERVER_REPS_MIN)
    # about 1.5 s untraced on this machine (2 CPUs, 60-90 k requests/s)
    requests = 20000 if quick else 120000
    base = clean_env()
    names = ["untraced"] + [c for c, _ in SERVER_CONFIGS]
    per = {c: {"rate": [], "ratio": [], "cpu": [], "added_cpu": [], "switches": []} for c in names}
    differ = set()
    trace = os.path.join(work, "server.trace")
    options = dict(SERVER_CONFIGS)
    for rep in range(reps):
        say(f"server (reqserver), repetition {rep + 1}/{reps}")
        # each repetition starts with another configuration: none is always run first
        for cfg in names[rep % len(names):] + names[:rep % len(names)]:
            opts = options.get(cfg)
            prefix = [] if opts is None else [gotrace, "run"] + opts + ["-o", trace, "--"]
            rate, cpu, agree, err = serve_once(reqserver, prefix, requests, base,
                                          f"reqserver under {' '.join(prefix[:-3]) or cfg}")
            per[cfg]["rate"].append(rate)
            per[cfg]["cpu"].append(cpu)
            k = re.search(r"kernel: (\d+) context switches recorded", err)
            per[cfg]["switches"].append(int(k.group(1)) if k else 0)
            if not agree:
                differ.add(cfg)
            for f in os.listdir(work):
                if f.startswith("server.trace"):
                    os.unlink(os.path.join(work, f))
        for cfg, _ in SERVER_CONFIGS:
            per[cfg]["ratio"].append(per[cfg]["rate"][-1] / per["untraced"]["rate"][-1])
            per[cfg]["added_cpu"].append(per[cfg]["cpu"][-1] - per["untraced"]["cpu"][-1])
    return {"per": per, "reps": reps, "requests": requests, "differ": sorted(differ)}


def server_rows(sc):
    s = f"server: loopback requests ({CONNS} connections, {LOOPS} event loop)"
    rows = []
    u = sc["per"]["untraced"]["rate"]
    rows.append((s, "untraced", f"{median(u) / 1e3:.1f} k requests/s ({min(u) / 1e3:.1f}-"
                 f"{max(u) / 1e3:.1f}), server CPU {median(sc['per']['untraced']['cpu']) * 1e6:.2f}"
                 f" us per request; medians of {sc['reps']} runs of {sc['requests']} requests"
                 " (min-max)", "", ""))
    for cfg, _ in SERVER_CONFIGS:
        p = sc["per"][cfg]
        fig = (f"{median(p['rate']) / 1e3:.1f} k requests/s = {median(p['ratio']):.3f}x untraced"
               f" ({min(p['ratio']):.3f}-{max(p['ratio']):.3f}), server CPU per request"
               f" {median(p['added_cpu']) * 1e6:+.2f} us ({min(p['added_cpu']) * 1e6:+.2f}-"
               f"{max(p['added_cpu']) * 1e6:+.2f})")
        if median(p["switches"]):
            fig += f"; {median(p['switches']):.0f} context switches recorded"
        target, ok = "", ""
        if cfg.startswith("the default"):
            target = ">= 0.95x untraced"
            ok = "PASS" if median(p["ratio"]) >= 0.95 else "MISS"
        rows.append((s, cfg, fig, target, ok))
    if sc["differ"]:
        rows.append((s, "answers differ between client and server under", ", ".join(sc["differ"]),
                     "identical", "MISS"))
    return rows
