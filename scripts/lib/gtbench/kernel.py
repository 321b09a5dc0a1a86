"""Part 5: what the kernel's records and samples cost under `gotrace run --kernel=on`, and
their rows of the table."""
import os
import re

from .run import BenchError, clean_env, measure, median, run_checked, say


KERNEL_CONFIGS = (
    ("hooks only (--kernel=off, the default)", ["--kernel=off"]),
    ("+ context switches", ["--kernel=on", "--cpu-samples", "off"]),
    ("+ CPU samples 99 Hz (--kernel=on)", ["--kernel=on"]),
    ("+ CPU samples 999 Hz", ["--kernel=on", "--cpu-samples", "999"]),
    ("+ off-CPU stacks", ["--kernel=on", "--cpu-samples", "off", "--offcpu-stacks"]),
)
RAN_RE = re.compile(r"exited with status 0 after ([0-9.]+) s")
KERNEL_RE = re.compile(r"gotrace: kernel: (\d+) context switches recorded .*?, (\d+) lost"
                       r"(?:; (\d+) CPU samples at \d+ Hz)?(?:; (\d+) off-CPU stacks)?.*?"
                       r"; (\d+) records, (\d+) KiB, drained in ([0-9.]+) ms of CPU")


def kernel_costs(paths, reps, quick, work):
    """The program's wall time under `gotrace run` (as gotrace measures it: from its start to
    its exit, conversion not included) against the untraced run's, per configuration."""
    wl, gotrace = paths["workload"], paths["gotrace"]
    data = os.path.join(work, "kernel-input.bin")
    if not os.path.exists(data):
        run_checked([paths["gendata"], data, "20" if quick else "50"], "gendata")
    loads = {
        "pipe ping-pong": [wl, "pipe", "20000" if quick else "60000"],
        "mutex (4 threads, one lock)": [wl, "mutex", "300000" if quick else "1500000", "4"],
        "pigz -p 2": ["pigz", "-p", "2", "-c", data],
    }
    base = clean_env()
    results = {}
    for name, cmd in loads.items():
        per = {c: {"wall": [], "ratio": [], "vs_hooks": [], "switches": [], "samples": [],
                   "offcpu": [], "lost": [], "records_s": [], "kib_s": [], "launcher_ms": [],
                   "launcher_pct": []} for c, _ in (("untraced", None),) + KERNEL_CONFIGS}
        refused = set()
        for rep in range(reps):
            say(f"kernel records: {name}, repetition {rep + 1}/{reps}")
            out = os.path.join(work, "kernel-out")
            per["untraced"]["wall"].append(measure(cmd, base, f"{name} untraced", out).wall)
            for cfg, opts in KERNEL_CONFIGS:
                if cfg in refused:
                    continue
                trace = os.path.join(work, "kernel.trace")
                r = measure([gotrace, "run"] + opts + ["-o", trace, "--"] + cmd, base,
                            f"{name} under gotrace run {' '.join(opts)}", out)
                if "unavailable" in r.stderr or "no kernel scheduling data" in r.stderr:
                    refused.add(cfg)
                    continue
                ran = RAN_RE.search(r.stderr)
                if not ran:
                    raise BenchError(f"{name}: no run time in gotrace's summary: {r.stderr[-300:]}")
                p = per[cfg]
                p["wall"].append(float(ran.group(1)))
                p["ratio"].append(p["wall"][-1] / per["untraced"]["wall"][-1])
                if cfg != KERNEL_CONFIGS[0][0]:
                    p["vs_hooks"].append(p["wall"][-1] / per[KERNEL_CONFIGS[0][0]]["wall"][-1])
                    k = KERNEL_RE.search(r.stderr)
                    if not k:
                        raise BenchError(f"{name}: no kernel line in: {r.stderr[-400:]}")
                    secs = max(p["wall"][-1], 1e-3)
                    p["switches"].append(int(k.group(1)))
                    p["lost"].append(int(k.group(2)))
                    p["samples"].append(int(k.group(3) or 0))
                    p["offcpu"].append(int(k.group(4) or 0))
                    p["records_s"].append(int(k.group(5)) / secs)
                    p["kib_s"].append(int(k.group(6)) / secs)
                    p["launcher_ms"].append(float(k.group(7)))
                    p["launcher_pct"].append(float(k.group(7)) / 10 / secs)
                for f in os.listdir(work):
                    if f.startswith("kernel.trace"):
                        os.unlink(os.path.join(work, f))
        results[name] = {"per": {c: {k: median(v) for k, v in d.items()} for c, d in per.items()},
                         "refused": refused}
    return results


def kernel_rows(kc):
    rows = []
    for name, w in kc.items():
        s = f"kernel records: {name}"
        per = w["per"]
        rows.append((s, "untraced", f"wall {per['untraced']['wall']:.3f} s", "", ""))
        for cfg, _ in KERNEL_CONFIGS:
            if cfg in w["refused"]:
                rows.append((s, cfg, "refused here (see gotrace's line)", "", ""))
                continue
            p = per[cfg]
            fig = f"wall {p['wall']:.2f} s = {p['ratio']:.3f}x untraced"
            if cfg != KERNEL_CONFIGS[0][0]:
                fig += (f", {p['vs_hooks']:.3f}x hooks only; {p['switches']:.0f} switches,"
                        f" {p['samples']:.0f} CPU samples, {p['offcpu']:.0f} off-CPU stacks,"
                        f" {p['lost']:.0f} lost; {p['records_s'] / 1e3:.1f} k records/s,"
                        f" {p['kib_s'] / 1024:.2f} MiB/s; launcher {p['launcher_ms']:.1f} ms CPU"
                        f" ({p['launcher_pct']:.2f}% of one CPU)")
            rows.append((s, cfg, fig, "", ""))
    return rows
