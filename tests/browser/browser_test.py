#!/usr/bin/env python3
"""The example's trace in a real browser: `go tool trace` (each Go given by --tool) serves it,
headless Chromium renders it, and the rendered DOM must show, in both trace formats (go1.19
for the tools before 1.22 and from 1.23, which convert it; go1.22 for those from 1.22)

  * the goroutines page: the example's threads grouped by start routine (worker_main x4,
    producer_main, logger_main, main);
  * the timeline: slices of the worker threads, and a slice ending in a sync block whose
    stack, as the selection panel renders it, points at the contended lock in workpool.c
    (record_result:<line of pthread_mutex_lock(&totals_lock)>, called from worker_main);
  * in the go1.22 format, the thread view: one lane per OS thread of the example, named
    "Thread <TID>" (the main thread's TID is the process id), and the sync block there too.

Chromium is driven through chromedriver (WebDriver over HTTP; Python's standard library
only).  A screenshot of each timeline is saved in --outdir as a test artifact.  Exits 77
(meson: skipped) only when Chromium is not installed.
"""
import argparse
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1600,1000",
]


class Failure(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, timeout=120):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raise Failure("%s %s: %s" % (method, url, e.read().decode(errors="replace")[:800]))


def wait_until(what, probe, seconds):
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
        except (OSError, Failure) as e:
            last = e
        time.sleep(0.2)
    raise Failure("timed out waiting for %s%s" % (what, ": %s" % last if last else ""))


class Browser:
    """One chromedriver + headless Chromium session with a fresh profile."""

    def __init__(self, chromium, chromedriver):
        self.profile = tempfile.mkdtemp(prefix="gotrace-chromium-")
        port = free_port()
        self.driver = subprocess.Popen([chromedriver, "--port=%d" % port],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = "http://127.0.0.1:%d" % port
        wait_until("chromedriver", lambda: http("GET", self.base + "/status", timeout=2), 30)
        options = {"binary": chromium, "args": CHROMIUM_FLAGS + ["--user-data-dir=" + self.profile]}
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
                                                 "goog:chromeOptions": options}}}
        self.session = self.base + "/session/" + http("POST", self.base + "/session", caps)["value"]["sessionId"]

    def open(self, url):
        http("POST", self.session + "/url", {"url": url})

    def js(self, script, *args):
        return http("POST", self.session + "/execute/sync", {"script": script, "args": list(args)})["value"]

    def keys(self, key, times=1):
        actions = []
        for _ in range(times):
            actions += [{"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]
        http("POST", self.session + "/actions",
             {"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})

    def screenshot(self, path):
        png = http("GET", self.session + "/screenshot")["value"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(png))

    def close(self):
        try:
            http("DELETE", self.session, timeout=10)
        except (OSError, Failure):
            pass
        self.driver.terminate()
        self.driver.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)


class TraceServer:
    """`go tool trace -http=127.0.0.1:PORT TRACE` (the tool binary itself)."""

    def __init__(self, tool, trace, log_path):
        self.port = free_port()
        self.log = open(log_path, "w")
        # BROWSER=/bin/true: the tool "opens" a browser at once instead of looking for one.
        env = dict(os.environ, BROWSER="/bin/true")
        self.proc = subprocess.Popen([tool, "-http=127.0.0.1:%d" % self.port, trace],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.url = "http://127.0.0.1:%d" % self.port

        def ready():
            if self.proc.poll() is not None:
                raise Failure("%s exited with %d (log: %s)" % (tool, self.proc.returncode, log_path))
            with urllib.request.urlopen(self.url + "/", timeout=5) as r:
                return r.status == 200
        wait_until("go tool trace to serve %s" % trace, ready, 120)

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


def check_goroutines_page(browser, server, version, minor, fmt):
    browser.open(server.url + "/goroutines")
    # Go 1.19: "worker_main N=4"; Go 1.23: a table row "worker_main<TAB>4<TAB>...".  The main
    # thread is named by its creation's synthetic frame "[main thread]", except by Go 1.23+'s
    # converter of a go1.19 trace, which names it by the outermost frame of its first
    # blocking stack: the program's main.
    main_group = "main" if minor >= 23 and fmt == "go1.19" else "[main thread]"
    expected = {"worker_main": 4, "producer_main": 1, "logger_main": 1, main_group: 1}
    seen = {"text": ""}

    def listed():
        seen["text"] = text = browser.js("return document.body.innerText")
        return all(re.search(r"(^|\n)%s(\s+N=|\t)%d\b" % (re.escape(routine), count), text)
                   for routine, count in expected.items())
    try:
        wait_until("the goroutines page", listed, 30)
    except Failure:
        # Go 1.23 names a thread that existed before tracing (main) after its first
        # blocking stack: main blocks in pthread_join for most of the run, so a missing
        # "main" means that join was not traced.
        raise Failure("Go %s /goroutines does not list %s (main unnamed: its pthread_join "
                      "was not traced?):\n%s" % (
                          version, ", ".join("%s x%d" % e for e in expected.items()), seen["text"]))
    print("ok Go %s goroutines page groups the threads by start routine" % version)


FIND_BLOCK_SLICE = """
var viewer = document.getElementById('trace-viewer');
var wanted = arguments[0], which = arguments[1], found = null, titles = {};
viewer.model.getAllThreads().forEach(function (t) {
  t.sliceGroup.slices.forEach(function (s) {
    titles[s.title] = true;
    var f = s[which];
    // The longest such slice: it is the one that shows in a screenshot.
    if (f && f.title === wanted && f.parentFrame && /^worker_main:/.test(f.parentFrame.title) &&
        (!found || s.duration > found.duration))
      found = s;
  });
});
if (found) {
  viewer.brushingStateController.changeSelectionFromTimeline(new tr.model.EventSet([found]));
}
return {found: found ? found.title : null, start: found ? found.start : 0,
        titles: Object.keys(titles)};
"""

# Frames a time window: select every slice inside it, then the viewer's own "f" key
# (zoom to selection) does the rest.
SELECT_WINDOW = """
var viewer = document.getElementById('trace-viewer'), lo = arguments[0], hi = arguments[1], set = [];
viewer.model.getAllThreads().forEach(function (t) {
  t.sliceGroup.slices.forEach(function (s) { if (s.start >= lo && s.end <= hi) set.push(s); });
});
viewer.brushingStateController.changeSelectionFromTimeline(new tr.model.EventSet(set));
viewer.focus();
return set.length;
"""

# Room for the whole selection panel (stacks) in the screenshot.
GROW_SELECTION_PANEL = """
var views = document.getElementsByTagName('tr-ui-a-analysis-view');
for (var i = 0; i < views.length; i++) views[i].style.height = '360px';
return views.length;
"""

HIDE_POLYFILL_NOTICE = """
var all = document.getElementsByTagName('*'), n = 0;
for (var i = 0; i < all.length; i++) {
  var e = all[i];
  if ((!e.children || e.children.length === 0) && String(e.textContent).trim() === 'Hide') {
    e.click(); n++;
  }
}
return n;
"""


THREAD_LANES = """
var names = [];
document.getElementById('trace-viewer').model.getAllThreads().forEach(function (t) {
  names.push(t.name || '');
});
return names;
"""


def check_thread_lanes(browser, version, pid, threads):
    """The thread view (the timeline check opened it) has a lane per OS thread."""
    names = browser.js(THREAD_LANES)
    lanes = [n for n in names if re.match(r"^Thread \d+$", n)]
    if "Thread %d" % pid not in lanes or len(lanes) < threads:
        raise Failure("Go %s thread view: want %d lanes \"Thread <TID>\", \"Thread %d\" among "
                      "them; lanes: %s" % (version, threads, pid, names))
    print("ok Go %s thread view: %d thread lanes, the main thread's is \"Thread %d\"" % (
        version, len(lanes), pid))


def check_timeline(browser, server, version, lock_frame, screenshot, view="", resumed=False):
    """resumed: Go 1.22's viewer of its own format gives a slice the stack of the previous
    stop as its start stack (cmd/trace/v2 gstate.go lastStopStack), 1.23 the end stack of
    the slice that stopped: look for the slice that resumed from the sync block."""
    which, label = ("startStackFrame", "Start Stack Trace") if resumed else ("endStackFrame", "End Stack Trace")
    browser.open(server.url + "/trace" + view)
    loaded = ("var v = document.getElementById('trace-viewer');"
              "return v && v.model ? v.model.getAllThreads().length : 0;")
    wait_until("the Go %s timeline to load" % version, lambda: browser.js(loaded), 120)
    result = browser.js(FIND_BLOCK_SLICE, lock_frame, which)
    worker_slices = [t for t in result["titles"] if "worker_main" in t or re.match(r"worker-\d", t)]
    if not worker_slices:
        raise Failure("Go %s timeline has no worker slices; titles: %s" % (version, result["titles"][:40]))
    if not result["found"]:
        raise Failure("Go %s timeline has no slice %s at %s called from worker_main" % (
            version, "resuming" if resumed else "ending", lock_frame))
    time.sleep(0.5)
    panel = browser.js("return document.body.innerText")
    tail = panel[panel.find("item selected"):] if "item selected" in panel else panel
    if label not in tail or lock_frame not in tail or "worker_main:" not in tail:
        raise Failure("Go %s selection panel does not render the blocking stack %s:\n%s" % (version, lock_frame, tail))
    if result["found"] not in tail:
        raise Failure("Go %s selection panel does not render the slice title %r:\n%s" % (version, result["found"], tail))
    print("ok Go %s timeline: %r blocks at %s (rendered in the selection panel)" % (version, result["found"], lock_frame))
    browser.js(HIDE_POLYFILL_NOTICE)
    browser.js(GROW_SELECTION_PANEL)
    start = result["start"]  # ms
    browser.js(SELECT_WINDOW, start - 12.0, start + 18.0)
    browser.keys("f")
    time.sleep(0.5)
    browser.js(FIND_BLOCK_SLICE, lock_frame, which)  # the blocked slice again, for the panel
    time.sleep(1.0)
    browser.screenshot(screenshot)
    print("ok Go %s screenshot: %s" % (version, screenshot))


def source_line(path, needle):
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if needle in line:
                return number
    raise Failure("%r not found in %s" % (needle, path))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gotrace", required=True)
    ap.add_argument("--workpool", required=True)
    ap.add_argument("--source", required=True, help="examples/workpool.c")
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--tool", action="append", default=[], metavar="VERSION=PATH",
                    help="a `go tool trace` binary (repeatable)")
    args = ap.parse_args()

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("SKIP: chromium is not installed (scripts/apt-packages lists it; run scripts/setup)")
        return 77
    chromedriver = shutil.which("chromedriver")
    if chromedriver is None:
        raise Failure("chromium is installed but chromedriver is not: install chromium-driver (scripts/setup)")

    if not args.tool:
        raise Failure("no `go tool trace` binary to test with (scripts/setup installs them)")
    os.makedirs(args.outdir, exist_ok=True)
    lock_frame = "record_result:%d" % source_line(args.source, "pthread_mutex_lock(&totals_lock)")
    traces = {}
    for fmt in ("go1.19", "go1.22"):
        trace = os.path.join(args.outdir, "workpool-%s.trace" % fmt)
        run = subprocess.run([args.gotrace, "run", "--format", fmt, "-o", trace, "--", args.workpool],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            raise Failure("gotrace run failed (%d):\n%s" % (run.returncode, run.stderr))
        pid = re.search(r"\(pid (\d+)\)", run.stderr)
        if not pid:
            raise Failure("gotrace run names no pid:\n%s" % run.stderr)
        traces[fmt] = (trace, int(pid.group(1)))
    threads = 7  # main, producer, logger, 4 workers

    browser = Browser(chromium, chromedriver)
    try:
        for spec in args.tool:
            version, tool = spec.split("=", 1)
            minor = int(version.split(".")[1])
            # Go 1.22 shows a go1.19 trace with 1.19's viewer: checked with 1.19 itself
            for fmt in [f for f in ("go1.19", "go1.22") if (minor >= 22) == (f == "go1.22") or
                        (f == "go1.19" and minor >= 23)]:
                trace, pid = traces[fmt]
                name = "%s-%s" % (version, fmt)
                server = TraceServer(tool, trace, os.path.join(args.outdir, "trace-go%s.log" % name))
                try:
                    check_goroutines_page(browser, server, "%s (%s)" % (version, fmt), minor, fmt)
                    resumed = fmt == "go1.22" and minor == 22
                    check_timeline(browser, server, "%s (%s)" % (version, fmt), lock_frame,
                                   os.path.join(args.outdir, "workpool-go%s.png" % name),
                                   resumed=resumed)
                    if fmt == "go1.22":
                        check_timeline(browser, server, "%s (%s thread view)" % (version, fmt),
                                       lock_frame,
                                       os.path.join(args.outdir, "workpool-go%s-threads.png" % name),
                                       view="?view=thread", resumed=resumed)
                        check_thread_lanes(browser, version, pid, threads)
                finally:
                    server.close()
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print("FAIL: %s" % e)
        sys.exit(1)
