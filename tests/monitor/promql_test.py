"""Every PromQL expression deploy/ holds -- the Grafana dashboard
(deploy/grafana/*.json) and every PrometheusRule under deploy/ -- against the
monitor: the metric names each uses are ones a real scrape of the monitor
carries, and a real Prometheus (Debian's) that scraped the monitor over real
tenants (the simulated GPU, the real interposer) answers each. Skips (77)
without prometheus. TAP."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from tap import Tap  # noqa: E402
import promql  # noqa: E402
import tenants  # noqa: E402

BUILD = os.path.abspath(os.environ.get("GS_BUILD_DIR", "build"))
GS = os.path.join(BUILD, "gpuslice")
WORKER = os.path.join(BUILD, "tests", "gs-worker")

if not shutil.which("prometheus"):
    print("1..0 # skip prometheus not installed (Debian: prometheus)")
    sys.exit(77)

t = Tap()
ok = t.ok

# The checker itself, on expressions whose answer is known.
ok(promql.metric_names('sum by (pod) (rate(a_total{x="y"}[5m])) / on (pod) group_left b > 0.5 '
                       'or c{__name__!="d"} unless label_replace(e, "f", "$1", "g", "(.*)")')
   == {"a_total", "b", "c", "e"},
   "metric names are read from PromQL past functions, matchers, ranges, grouping and strings",
   promql.metric_names('sum by (pod) (rate(a_total{x="y"}[5m])) / on (pod) group_left b > 0.5'))
exprs = promql.expressions()
ok(any("grafana" in w or w.startswith("gpuslice.json") for w, _ in exprs) and len(exprs) >= 10,
   "deploy/grafana/gpuslice.json has expressions to check (%d with the rules)" % len(exprs), exprs[:3])

root = tempfile.mkdtemp(prefix="gs-promql-")
live = dict(os.environ, GS_FAKE_KERNEL_US="2000")
# Refused at its cap, then finished; a slice never used; a latency-critical tenant
# and a tenant with a share, both live while Prometheus scrapes.
subprocess.run(tenants.argv(root, ["--memory", "1Gi", "--", os.path.join(BUILD, "gpuslice-demo"), "256"]),
               capture_output=True, timeout=120)
subprocess.run(tenants.argv(root, ["--memory", "256Mi", "--", "true"]), capture_output=True, timeout=120)
kids = [tenants.live(root, ["--memory", "256Mi", "--critical", "--", WORKER, "direct", "requests", "4000", "2"], live),
        tenants.live(root, ["--memory", "512Mi", "--compute", "40", "--", WORKER, "direct", "launch", "8000"], live)]
# The simulated NVML beside the monitor: the audit's series are there too.
mon = subprocess.Popen([GS, "monitor", "--listen", "127.0.0.1:0", "--interval", "1", "--state-root", root,
                        "--pod-resources-socket", ""], stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), GS_FAKE_NVML_PROCS=""))
m = re.search(r"http://127\.0\.0\.1:(\d+)", mon.stderr.readline())
port = int(m.group(1)) if m else 0
time.sleep(1)
body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode() if port else ""
node = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/api/slices" % port, timeout=10).read())["node"] \
    if port else "?"
ok("gpuslice_slice_request_duration_seconds_count{" in body and "gpuslice_audit_up 1" in body and
   "gpuslice_slice_over_cap{" in body,
   "the scrape has samples of every family (requests of the critical tenant, the audit's)", body[-600:])
ok(not {"gpuslice_nonexistent_total"} <= promql.exported(body),
   "a name the monitor does not export is not taken for one", sorted(promql.exported(body))[:5])

# The node label as the ServiceMonitor's relabeling gives it (deploy/monitoring).
prom = promql.Prometheus("127.0.0.1:%d" % port, labels={"node": node})
try:
    ok(prom.wait_scraped(samples=6), "Prometheus scraped the monitor", prom.logs())
    for good, name, detail in promql.check(prom, body):
        ok(good, name, detail)
finally:
    prom.stop()
    mon.terminate()
    mon.wait(timeout=10)
    tenants.stop(kids)
    shutil.rmtree(root, ignore_errors=True)
sys.exit(t.done())
