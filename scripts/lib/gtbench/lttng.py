"""LTTng-UST, a peer: a private session daemon for the duration of the workloads."""
import os

from .run import run_checked


class Lttng:
    WRAPPER = "liblttng-ust-pthread-wrapper.so.1"

    def __init__(self, work):
        self.home = os.path.join(work, "lttng-home")
        os.makedirs(self.home)
        self.env = dict(os.environ, LTTNG_HOME=self.home)
        self.pid = None

    def lttng(self, *args):
        run_checked(["lttng"] + list(args), "lttng " + " ".join(args), env=self.env)

    def start(self):
        pidfiles = [os.path.join(self.home, ".lttng", "lttng-sessiond.pid"),
                    "/var/run/lttng/lttng-sessiond.pid"]
        run_checked(["lttng-sessiond", "--daemonize"], "lttng-sessiond --daemonize", env=self.env)
        for pf in pidfiles:
            if os.path.exists(pf):
                with open(pf) as f:
                    self.pid = int(f.read().strip())
                break
        self.lttng("create", "gotrace-bench", "--output=" + os.path.join(self.home, "trace"))
        self.lttng("enable-event", "--userspace", "lttng_ust_pthread:*")
        self.lttng("start")

    def stop(self):
        try:
            self.lttng("stop")
            self.lttng("destroy")
        finally:
            if self.pid:
                try:
                    os.kill(self.pid, 15)
                except ProcessLookupError:
                    pass
