"""The release build scripts/bench measures (build-bench/) and the peers' packages it
compares with (bench/apt-packages)."""
import os
import shutil
import subprocess

from .run import ROOT, BenchError, run_checked, say


def install_peers():
    env = dict(os.environ, GT_APT_LIST=os.path.join(ROOT, "bench", "apt-packages"))
    r = subprocess.run([os.path.join(ROOT, "scripts", "setup")], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise BenchError(f"installing the peers (bench/apt-packages): {r.stdout.strip()}")
    for tool in ("pigz", "zstd", "strace", "valgrind", "lttng", "lttng-sessiond"):
        if not shutil.which(tool):
            raise BenchError(f"{tool} is not on PATH after scripts/setup")


BENCH_TARGETS = ["bench/microbench", "bench/libgtbenchstub.so", "bench/workload",
                 "bench/reqserver", "bench/gendata", "bench/count_facts", "cli/gotrace"]


def build(build_dir, preload_override):
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        say(f"configuring {build_dir} (release)")
        run_checked(["meson", "setup", build_dir, ROOT, "-Dbuildtype=release"], "meson setup")
    targets = list(BENCH_TARGETS)
    if not preload_override:
        q = subprocess.run(["ninja", "-C", build_dir, "-t", "query", "preload/libgotrace.so"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if q.returncode != 0:
            raise BenchError("this tree does not build preload/libgotrace.so; "
                             "name one with --preload PATH")
        targets.append("preload/libgotrace.so")
    say("building " + " ".join(targets))
    run_checked(["ninja", "-C", build_dir, "-j2"] + targets, "ninja")
    preload = preload_override or os.path.join(build_dir, "preload", "libgotrace.so")
    if not os.path.exists(preload):
        raise BenchError(f"{preload} does not exist")
    return preload
