"""The table: rows of the microbenchmarks, workloads and throughput, rendered as text and as
the markdown written into docs/benchmarks.md."""
from .workloads import WORKLOAD_ROLES


def verdict(ok):
    return "PASS" if ok else "MISS"


# how each shape of micro.PAIR_SHAPES is named in a row
PAIR_SHAPE_NAMES = {
    "mutex": "mutex lock+unlock pair",
    "mutexwait": "mutex lock+unlock pair (a thread blocked on another mutex)",
    "condwait": "mutex lock+unlock pair (two threads blocked on a condvar)",
    "handoff": "mutex lock+unlock pair (right after this thread slept on the same mutex)",
    "rwlock": "rwlock wrlock+unlock pair",
    "rwlockwait": "rwlock wrlock+unlock pair (a thread blocked on another rwlock)",
    "sem": "semaphore post+wait pair",
    "semwait": "semaphore post+wait pair (a thread blocked on another semaphore)"}


def micro_rows(micro, ic):
    """Part 1's rows: the floor, the fast paths, instructions per call."""
    rows = []  # (section, measure, figure, target, verdict)

    def row(section, what, figure, target="", ok=None):
        rows.append((section, what, figure, target, "" if ok is None else verdict(ok)))

    m = micro
    s = "floor"
    row(s, "rdtsc", f"{m['rdtsc']:.1f} ns")
    row(s, "rdtscp (time + CPU id in TSC_AUX)", f"{m['rdtscp']:.1f} ns")
    row(s, "rseq cpu_id read", f"{m['rseq']:.2f} ns")
    row(s, "sched_getcpu (vDSO)", f"{m['getcpu']:.1f} ns")
    row(s, "one fact: rdtsc + rseq cpu + reservation + 16-byte store, per-CPU MAP_SHARED chunk",
        f"{m['reserve']:.1f} ns")
    row(s, "libunwind unw_backtrace, 16 frames", f"{m['unw16']:.0f} ns")
    row(s, "libunwind unw_backtrace, 32 frames", f"{m['unw32']:.0f} ns")
    s = "fast path"
    for shape, what in PAIR_SHAPE_NAMES.items():
        row(s, f"uncontended {what}, untraced / traced",
            f"{m[shape + '_u']:.1f} / {m[shape + '_t']:.1f} ns = {m[shape + '_ratio']:.2f}x",
            "<= 1.15x", m[shape + "_ratio"] <= 1.15)
    row(s, "--locks=all: uncontended mutex / rwlock pair (lock records with the acquisition's"
        " stack), added ns per pair, stacks none / unwind(16)",
        f"{m['lockall_mutex_none']:.0f} / {m['lockall_mutex_unwind']:.0f} ns,"
        f" {m['lockall_rwlock_none']:.0f} / {m['lockall_rwlock_unwind']:.0f} ns")
    row(s, "one fact (sched_yield), stacks=none: added ns, / floor",
        f"{m['none']:.1f} ns = {m['none_floor']:.2f}x floor", "<= 12 ns, <= 1.5x floor",
        m["none"] <= 12 and m["none_floor"] <= 1.5)
    row(s, "one fact (sched_yield), stacks=fp: added ns, / floor",
        f"{m['fp']:.1f} ns = {m['fp_floor']:.2f}x floor", "<= 2.5x floor", m["fp_floor"] <= 2.5)
    row(s, "one fact (sched_yield), stacks=unwind depth 16, a stack new to its place (walked):"
        " added ns, / unw_backtrace(16)",
        f"{m['unwind_new']:.0f} ns = {m['unwind_new_unw']:.2f}x", "<= 1.2x unw_backtrace",
        m["unwind_new_unw"] <= 1.2)
    row(s, "one fact (sched_yield), stacks=unwind depth 16, the same stack again (a memo):"
        " added ns, / unw_backtrace(16)", f"{m['unwind']:.0f} ns = {m['unwind_unw']:.2f}x")
    row(s, "syscall hook (2 facts), no kernel: added ns per call, stacks none / unwind",
        f"{m['read_none']:.0f} / {m['read_unwind']:.0f} ns ({m['read_fact_none']:.0f} ns per fact)")
    row(s, "read(2) of 1 byte of /dev/zero: untraced, added by stacks none / unwind",
        f"{m['readreal_base']:.0f} ns, +{m['readreal_none']:.0f} / +{m['readreal_unwind']:.0f} ns")

    row(s, "process start + exit, empty program: untraced, added by gotrace (default stacks)",
        f"CPU {m['start_cpu'] * 1e3:.1f} ms +{m['start_added_cpu'] * 1e3:.1f} ms,"
        f" wall {m['start_wall'] * 1e3:.1f} ms +{m['start_added_wall'] * 1e3:.1f} ms")
    s = "instructions per call (callgrind)"
    row(s, "floor fact (rdtsc + rseq cpu + reservation + 16-byte store)", f"{ic['reserve']:.0f}")
    row(s, "unw_backtrace 16 / 32 frames", f"{ic['unw16']:.0f} / {ic['unw32']:.0f}")
    for shape, what in PAIR_SHAPE_NAMES.items():
        ratio = ic[shape + "_t"] / ic[shape + "_u"]
        row(s, f"{what}, untraced / traced (the pair alone)",
            f"{ic[shape + '_u']:.0f} / {ic[shape + '_t']:.0f} = {ratio:.2f}x", "<= 1.15x",
            ratio <= 1.15)
    row(s, "one fact (sched_yield), added by stacks none / fp / unwind(16) (a memo) /"
        " unwind(16) (walked)",
        f"{ic['fact_none']:.0f} / {ic['fact_fp']:.0f} / {ic['fact_unwind']:.0f} /"
        f" {ic['fact_unwind_new']:.0f}"
        f" = {ic['fact_none'] / ic['reserve']:.2f}x / {ic['fact_fp'] / ic['reserve']:.2f}x floor,"
        f" {ic['fact_unwind'] / ic['unw16']:.2f}x / {ic['fact_unwind_new'] / ic['unw16']:.2f}x"
        " unw_backtrace(16)")
    return rows


def table(micro, ic, wl, enc, sym):
    rows = micro_rows(micro, ic)  # (section, measure, figure, target, verdict)

    def row(section, what, figure, target="", ok=None):
        rows.append((section, what, figure, target, "" if ok is None else verdict(ok)))

    rec_bytes, trace_bpe = [], []
    for name, w in wl.items():
        s = name
        per = w["per"]
        u = per["untraced"]

        def spread(cfg, key, form):
            """The smallest and largest of the repetitions, beside their median."""
            return f"({w['min'][cfg][key]:{form}}-{w['max'][cfg][key]:{form}})"

        row(s, "untraced", f"CPU {u['cpu']:.3f} s {spread('untraced', 'cpu', '.3f')},"
            f" wall {u['wall']:.3f} s {spread('untraced', 'wall', '.3f')},"
            f" RSS {u['rss'] / 1024:.1f} MiB; medians of {w['reps']} runs (min-max)")
        for cfg in w["configs"][1:]:
            p = per[cfg]
            fig = (f"CPU {p['cpu']:.3f} s = {p['cpu_ratio']:.2f}x {spread(cfg, 'cpu_ratio', '.2f')},"
                   f" wall {p['wall']:.3f} s = {p['ratio']:.2f}x {spread(cfg, 'ratio', '.2f')}")
            if cfg.startswith("gotrace"):
                fig += (f", {p['facts']:.0f} facts, {p['added_ns']:+.0f} CPU ns/fact,"
                        f" RSS {p['rss'] / 1024:.1f} MiB")
            target, ok = "", None
            big = name.startswith(("pigz", "zstd"))
            if cfg == "gotrace unwind" and big:
                target, ok = "<= 1.03x (default stacks)", p["cpu_ratio"] <= 1.03
            elif cfg == "gotrace unwind" and "ping-pong" in name:
                target, ok = "<= 1.5x (default stacks)", p["cpu_ratio"] <= 1.5
            elif cfg == "gotrace none":
                fig += (f"; CPU vs LTTng-UST {p['vs_lttng']:.2f}x {spread(cfg, 'vs_lttng', '.2f')},"
                        f" strace -f adds {p['vs_strace']:.0f}x more")
                target = "< LTTng-UST, strace adds >= 20x more"
                ok = p["vs_lttng"] < 1 and p["vs_strace"] >= 20
            row(s, cfg, fig, target, ok)
        # the target (issue 13, item 1) is for stacks none; unwind shows what stacks add
        capture_rb = per["gotrace none"]["rec_bytes"]
        rec_bytes.append(capture_rb)
        unw = per["gotrace unwind"]
        row(s, "capture bytes per fact (records / whole file), stacks none; unwind",
            f"{capture_rb:.1f} / {per['gotrace none']['file_bytes']:.1f} B;"
            f" {unw['rec_bytes']:.1f} / {unw['file_bytes']:.1f} B", "<= 16 B (none)", capture_rb <= 16)
        c = w["convert"]
        if c:
            bpe = c["trace_bytes"] / c["events"] if c["events"] else float("nan")
            trace_bpe.append(bpe)
            row(s, "convert (stacks=unwind capture, symbolized)",
                f"{c['wall']:.2f} s ({c['cpu']:.2f} s CPU), {c['facts']} facts, "
                f"{c['facts_per_s'] / 1e6:.2f} M facts/s, RSS {c['rss_kb'] / 1024:.1f} MiB")
            row(s, "trace bytes per event", f"{bpe:.2f} B ({c['events']} events)", "<= 8 B", bpe <= 8)
        if w["differ"]:
            row(s, "output differs from the untraced run under", ", ".join(w["differ"]),
                "identical", False)
    s = "encoder, symbolizer"
    rate, rss, size = enc
    row(s, f"encoder: scripts/bench-encoder {size} (synthetic capture, --no-symbols)",
        f"{rate / 1e6:.1f} M facts/s, RSS {rss:.1f} MiB", ">= 10 M facts/s", rate >= 10e6)
    row(s, "symbolizer: scripts/bench-symbolizer, PCs/s once a module is loaded",
        f"{sym:,.0f} PCs/s", ">= 200,000 PCs/s", sym >= 200000)
    return rows


def render_text(rows):
    widths = [max(len(r[i]) for r in rows + [("section", "measure", "figure", "target", "")])
              for i in range(5)]
    widths[1] = min(widths[1], 70)
    lines = []
    last = None
    for r in rows:
        if r[0] != last:
            lines.append(f"== {r[0]}")
            last = r[0]
        lines.append(f"  {r[1]:<{widths[1]}}  {r[2]}" + (f"   [{r[3]}: {r[4]}]" if r[3] else ""))
    return "\n".join(lines)


# Text from this line on in the markdown file is written by hand (the analysis of a run) and
# kept when the table above it is generated again.
KEEP_MARKER = "<!-- kept by scripts/bench: hand-written from here on -->"

METHODS = """\
How the figures are taken (`scripts/bench`, bench/):

- Every figure is the median of the repetitions; every ratio and difference is taken within
  one repetition, its configurations run one after the other, then the median is taken.
  A workload's times and ratios are followed by their spread: (smallest-largest) of the
  repetitions.
- Microbenchmark figures (bench/microbench.c) are ns per call, the fastest of 5 batches in one
  process.  "One fact" is `sched_yield` answered by bench/stub.c without entering the kernel:
  `LD_PRELOAD="libgotrace.so libgtbenchstub.so"` minus `libgtbenchstub.so` alone, divided by the
  GT_YIELD facts counted in the capture, so the system call's noise is not in it.  The floor
  is rdtsc with the rseq area's CPU, one atomic fetch-add on a per-CPU chunk of a MAP_SHARED
  file and a 16-byte (compact) record stored as two words, first word last, in a warm chunk.  Every call is made 40 frames deep.
- Instruction counts come from callgrind (two run lengths, the difference per call): they do
  not move with the machine's load.  The mutex, rwlock and semaphore pairs are counted alone:
  the instructions inside microbench's bench_pair, bench_rwlock_pair or bench_sem_pair
  (`--toggle-collect`), per pair; the mutex's "handoff" time is the pair alone too (rdtscp
  around it, the bracket's own cost taken off).
- Workloads: CPU time is user + system of the traced program (and, for strace and drd, of
  the tool that waited for it), read by /usr/bin/time with the peak RSS.  Verdicts use CPU
  time, because the machine is shared and wall time mostly measures the other programs on
  it; wall time is shown next to it.  "facts" and capture bytes per fact come from the
  capture through the encoder's reader (bench/count_facts.c); ns/fact is the added CPU time
  divided by those facts.  gotrace runs capture only (no GOTRACE_OUT); one capture per
  workload (stacks=unwind, the default) is converted on its own, with symbols.
- The compressors' outputs (and the small workloads' printed results) are compared with the
  untraced run's: any difference is reported as a MISS row.
- Kernel records (`gotrace run --kernel=on`, issue 15): the program's wall time as gotrace
  measures it (its start to its exit: "exited ... after N s", conversion not included)
  against the untraced run's and against `--kernel=off` (hooks alone) within one
  repetition; switches, samples, losses, records and bytes per second, and the launcher's
  drain CPU come from gotrace's "kernel:" line (the file's header).
- The server (bench/reqserver, part 6): a loopback TCP server answering 32-byte requests with
  64 bytes from one epoll loop, loaded by an untraced client with 8 connections and one
  request in flight on each (as redis and redis-benchmark).  Requests per second as the
  client measures them; the server's CPU time per request from its getrusage.  Each
  repetition runs the configurations in turn, starting with a different one each time.
- The long run (`--long`): `bench/workload pipe ROUNDS SECONDS` under bare LD_PRELOAD, stacks
  none, for `--long-seconds` (as many round trips as fit); GOTRACE_LAST is what `gotrace run --last` sets.  Capture on disk is the file's allocated
  blocks (du); `gotrace convert` (with symbols) is timed by /usr/bin/time; the viewers are
  opened by bench/viewer-load's measure() (docs/benchmarks.md, "Traces a viewer can open").
"""


def markdown_table(rows):
    out = ["| | measure | figure | target | verdict |", "| --- | --- | --- | --- | --- |"]
    last = None
    for r in rows:
        sec = f"**{r[0]}**" if r[0] != last else ""
        last = r[0]
        cells = [sec] + [c.replace("|", "\\|") for c in r[1:]]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def workload_roles():
    """What each workload stands for, one line each (kept with the table's figures)."""
    return ("What each workload stands for:\n\n" +
            "".join(f"- **{name}**: {role}.\n" for name, role in WORKLOAD_ROLES.items()))


def render_markdown(rows, header):
    return "\n".join([header, "", METHODS, workload_roles(), markdown_table(rows)])
