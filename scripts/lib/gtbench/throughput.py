"""Part 4's throughput figures: the encoder and the symbolizer, through their own scripts
(scripts/bench-encoder, scripts/bench-symbolizer)."""
import os
import re

from .run import ROOT, BenchError, run_checked, say


def encoder_symbolizer(build_dir, quick, work):
    env = dict(os.environ, BUILD=build_dir, TMPDIR=work)
    size = "32" if quick else "128"
    say(f"scripts/bench-encoder {size}")
    out = run_checked([os.path.join(ROOT, "scripts", "bench-encoder"), size], "scripts/bench-encoder", env=env)
    m = re.search(r"throughput\s+([\d.]+) million facts/s", out)
    rss = re.search(r"peak RSS\s+([\d.]+) MiB", out)
    if not m:
        raise BenchError("cannot read scripts/bench-encoder's throughput")
    enc = (float(m.group(1)) * 1e6, float(rss.group(1)) if rss else float("nan"), size)
    say("scripts/bench-symbolizer")
    out = run_checked([os.path.join(ROOT, "scripts", "bench-symbolizer")], "scripts/bench-symbolizer", env=env)
    m = re.search(r"once a module is loaded: (\d+)", out)
    if not m:
        raise BenchError("cannot read scripts/bench-symbolizer's PCs/s: " + out.strip()[:200])
    return enc, float(m.group(1))
