"""The monitor's /metrics over real tenants (the simulated GPU, the real
interposer): a tenant with a 40 % share launching kernels and a
latency-critical tenant serving requests; the GPU time and request latency the
interposer's compute controller publishes, the GPU series, the build info;
`promtool check metrics`; and --listen on IPv6 and both families. TAP."""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

BUILD = os.path.abspath(os.environ.get("GS_BUILD_DIR", "build"))
GS = os.path.join(BUILD, "gpuslice")
WORKER = os.path.join(BUILD, "tests", "gs-worker")
KERNEL_US = 2000
t = Tap()
ok = t.ok


def series(body):
    """{(name, frozenset(labels)): value} of a text-format body."""
    out = {}
    for ln in body.splitlines():
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', ln)
        if m:
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def one(s, metric, **want):
    got = [v for (n, lb), v in s.items() if n == metric and all((k, w) in lb for k, w in want.items())]
    return got[0] if len(got) == 1 else None


def serve(root, listen):
    p = subprocess.Popen([GS, "monitor", "--listen", listen, "--state-root", root, "--pod-resources-socket", ""],
                         stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    m = re.search(r"http://(\S+):(\d+)", line)
    return p, (m.group(1), int(m.group(2))) if m else (None, 0), line


def get(host, port, path="/metrics"):
    try:
        with urllib.request.urlopen("http://%s:%d%s" % (host, port, path), timeout=10) as r:
            return r.read().decode()
    except OSError as e:
        return "ERROR %s" % e


root = tempfile.mkdtemp(prefix="gs-metrics-")
env = dict(os.environ, GS_FAKE_KERNEL_US=str(KERNEL_US))
# A latency-critical tenant: 200 requests (a 2 ms kernel, then a synchronisation), 1 ms apart.
t0 = time.monotonic()
crit = subprocess.run([GS, "run", "--simulated", "--memory", "256Mi", "--critical", "--keep-state",
                       "--state-root", root, "--", WORKER, "direct", "requests", "200", "1"],
                      capture_output=True, text=True, env=env, timeout=300)
crit_wall = time.monotonic() - t0
ok(crit.returncode == 0 and "requests 200" in crit.stdout, "a latency-critical tenant served 200 requests",
   crit.stdout[-300:] + crit.stderr[-300:])
# A tenant with a 40 % share: 1000 kernels of 2 ms (the simulated GPU runs each
# that long). With a latency-critical tenant on the GPU (its slice, above) each
# launch waits for the kernel before it, so the launches take the kernels' time
# and the compute windows close as they go; the last, cut short by the exit, is
# not charged (a window is charged when it is drained): up to a whole period
# (0.2 s), and the two kernels that may be in flight across its start (on a
# loaded CI host the charge came to 2.0 - 0.203 s).
t0 = time.monotonic()
share = subprocess.run([GS, "run", "--simulated", "--memory", "512Mi", "--compute", "40", "--keep-state",
                        "--state-root", root, "--", WORKER, "direct", "launch", "1000"],
                       capture_output=True, text=True, env=env, timeout=300)
share_wall = time.monotonic() - t0
ok(share.returncode == 0, "a tenant with a 40 % share launched 1000 kernels of 2 ms", share.stderr[-400:])
ids = {}
for d in os.listdir(root):
    lim = open(os.path.join(root, d, "limits")).read()
    ids["crit" if "priority = critical" in lim else "share"] = d

srv, (host, port), line = serve(root, "127.0.0.1:0")
body = get(host, port) if port else ""
srv.terminate()
srv.wait(timeout=10)
s = series(body)
k = KERNEL_US / 1e6
gs_share = one(s, "gpuslice_slice_gpu_seconds_total", slice=ids.get("share"))
ok(gs_share is not None and 1000 * k - 0.2 - 2 * k <= gs_share <= share_wall,
   "the share tenant's GPU time is its kernels' (1000 x 2 ms, less its last window), no more than its run took",
   (gs_share, share_wall))
ok(one(s, "gpuslice_slice_compute_share_ratio", slice=ids.get("share")) == 0.4 and
   one(s, "gpuslice_slice_compute_share_ratio", slice=ids.get("crit")) == 0,
   "the share as a ratio: 0.4, and 0 for the slice with none", body[-300:])
n = one(s, "gpuslice_slice_request_duration_seconds_count", slice=ids.get("crit"))
total = one(s, "gpuslice_slice_request_duration_seconds_sum", slice=ids.get("crit"))
ok(n == 200 and total is not None and 200 * k <= total <= crit_wall,
   "the critical tenant's 200 requests, each at least its 2 ms kernel, in all no more than its run took",
   (n, total, crit_wall))
ok(one(s, "gpuslice_slice_gpu_seconds_total", slice=ids.get("crit")) == total,
   "a latency-critical slice's GPU time is its requests' time", body[-300:])
ok(one(s, "gpuslice_slice_request_duration_seconds_count", slice=ids.get("share")) is None,
   "a best-effort slice has no request series", body[-300:])
ver = subprocess.run([GS, "version"], capture_output=True, text=True).stdout
vm = re.match(r"gpuslice (\S+) \(git (\S+)\)", ver)
ok(vm and one(s, "gpuslice_build_info", version=vm.group(1), revision=vm.group(2)) == 1,
   "gpuslice_build_info names the version and revision `gpuslice version` prints", (ver, body[:300]))
gib = 1 << 30
tot = one(s, "gpuslice_gpu_memory_total_bytes", gpu="0")
alc = one(s, "gpuslice_gpu_memory_allocatable_bytes", gpu="0")
ok(tot == 16 * gib and one(s, "gpuslice_gpu_memory_allocated_bytes", gpu="0") == 768 << 20 and
   alc and 0 < alc < tot and one(s, "gpuslice_gpu_memory_free_bytes", gpu="0") == alc - (768 << 20) and
   one(s, "gpuslice_gpu_slices", gpu="0", uuid="SIM-GPU-0000", name="gpuslice simulated GPU") == 2,
   "per GPU: 16 GiB total, what slices are offered, the two caps allocated, the rest free, 2 slices",
   [ln for ln in body.splitlines() if ln.startswith("gpuslice_gpu_")])
promtool = shutil.which("promtool")
if promtool:
    p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True)
    ok(p.returncode == 0, "promtool check metrics passes (names, units, HELP and TYPE)", p.stdout + p.stderr)
else:
    ok(True, "promtool check metrics # skip promtool not installed (Debian: prometheus)")

# --listen on IPv6 and on both families.
v6 = socket.has_ipv6
if v6:
    try:
        with socket.socket(socket.AF_INET6) as so:
            so.bind(("::1", 0))
    except OSError:
        v6 = False
if v6:
    p, (h, port), line = serve(root, "[::1]:0")
    ok(h == "[::1]" and "gpuslice_slices 2" in get("[::1]", port), "--listen [::1]:PORT serves on IPv6", line)
    p.terminate()
    p.wait(timeout=10)
    p, (h, port), line = serve(root, ":0")
    ok("IPv6 and IPv4" in line and "gpuslice_slices 2" in get("[::1]", port) and
       "gpuslice_slices 2" in get("127.0.0.1", port), "--listen :PORT serves IPv6 and IPv4 on one port", line)
    p.terminate()
    p.wait(timeout=10)
else:
    ok(True, "--listen on IPv6 # skip no IPv6 on this machine")
    ok(True, "--listen :PORT on both families # skip no IPv6 on this machine")
for bad in ("[::1]", "::1:80", "[::1]:x", "[nonsense]:80", "1.2.3:80"):
    r = subprocess.run([GS, "monitor", "--listen", bad], capture_output=True, text=True, timeout=10)
    ok(r.returncode == 2 and "[IPV6]:PORT" in r.stderr and ":9478" in r.stderr,
       "--listen %s is refused with the forms it takes" % bad, r.stderr)
shutil.rmtree(root, ignore_errors=True)
sys.exit(t.done())
