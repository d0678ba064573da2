"""gpuslice monitor reads what a slice's processes did: a standalone run on
the simulated GPU is kept (--keep-state), then listed. TAP output."""
import json
import os
import subprocess
import sys
import tempfile

BUILD = os.environ.get("GS_BUILD_DIR", "build")
GS = os.path.join(BUILD, "gpuslice")


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

tap = Tap()
ok = tap.ok


root = tempfile.mkdtemp(prefix="gs-monitor-")
r = subprocess.run([GS, "run", "--simulated", "--memory", "1Gi", "--compute", "20", "--keep-state",
                    "--state-root", root, "--", os.path.join(BUILD, "gpuslice-demo"), "256"],
                   capture_output=True, text=True)
ok(r.returncode == 0, "a standalone run on the simulated GPU keeps its state", r.stderr[-500:])
m = subprocess.run([GS, "monitor", "--json", "--state-root", root], capture_output=True, text=True)
ok(m.returncode == 0, "monitor --json exits 0", m.stderr)
data = json.loads(m.stdout) if m.returncode == 0 else {"slices": []}
sl = data["slices"]
ok(len(sl) == 1 and sl[0]["id"].startswith("run-"), "one slice listed, by its id", sl)
s = sl[0] if sl else {}
ok(s.get("memory_cap_bytes") == 1 << 30 and s.get("compute_percent") == 20 and s.get("simulated") and
   s.get("sharing") == "timeslice" and s.get("mps_threads_percent") == 0 and s.get("yield") == "gate" and
   s.get("green_sms") == 0 and s.get("guard_us") == 600 and s.get("prime_us") == 0 and s.get("compute_mode") == "share" and s.get("priority") == "best-effort",
   "limits shown: 1 GiB, 20 % share, best-effort, simulated, time-sliced, gated (guard 600 us) next to a critical tenant",
   s)
# The demo loads 256 MiB of weights, fills the rest with 256 MiB blocks, hits the cap once.
ok(s.get("peak_process_bytes") == 1 << 30 and s.get("allocations") == 4 and s.get("refused_by_cap") == 1,
   "what the process did: peak 1 GiB, 4 allocations, 1 refused", s)
ok(s.get("used_bytes") == 0 and s.get("processes") == 0 and s.get("cuda_seen"),
   "after exit: nothing in use, no live process, CUDA was seen", s)
t = subprocess.run([GS, "monitor", "--once", "--state-root", root], capture_output=True, text=True)
ok(t.returncode == 0 and "SIMULATED GPU" in t.stdout and "1 GiB" in t.stdout, "terminal view labels the simulated GPU", t.stdout)
bad = subprocess.run([GS, "monitor", "--once", "--state-root", root + "/missing"], capture_output=True, text=True)
ok(bad.returncode == 1 and "--state-root" in bad.stderr, "a missing state root is a clear error", bad.stderr)
os.makedirs(os.path.join(root, "empty"))
e = subprocess.run([GS, "monitor", "--json", "--state-root", os.path.join(root, "empty")], capture_output=True, text=True)
ok(e.returncode == 0 and json.loads(e.stdout)["slices"] == [], "an empty root lists nothing", e.stdout)
# --listen: Prometheus /metrics and JSON /api/slices over HTTP.
import re
import time
import urllib.error
import urllib.request

srv = subprocess.Popen([GS, "monitor", "--listen", "127.0.0.1:0", "--state-root", root],
                       stderr=subprocess.PIPE, text=True)
line = srv.stderr.readline()
mport = re.search(r"http://127\.0\.0\.1:(\d+)", line)
ok(mport is not None, "monitor --listen says where it serves", line)
if mport:
    base = "http://127.0.0.1:%s" % mport.group(1)
    body = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
    sid = sl[0]["id"] if sl else "?"
    lbl = 'slice="%s",device="SIM-GPU-0000",simulated="true",namespace="",pod="",container=""' % sid
    want = ['gpuslice_slices 1',
            'gpuslice_slice_memory_limit_bytes{%s} %d' % (lbl, 1 << 30),
            'gpuslice_slice_memory_peak_bytes{%s} %d' % (lbl, 1 << 30),
            'gpuslice_slice_compute_share_ratio{%s} 0.2' % lbl,
            'gpuslice_slice_oom_total{%s} 1' % lbl,
            'gpuslice_slice_cuda_seen{%s} 1' % lbl]
    missing = [w for w in want if w not in body.splitlines()]
    ok(not missing, "/metrics has the slice's gauges and counters in Prometheus text format", missing or body[:400])
    types = re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M)
    helps = set(re.findall(r"^# HELP (\S+) ", body, re.M))
    ok(len(types) >= 18 and {n for n, _ in types} == helps and
       all(n.endswith("_total") == (t == "counter") for n, t in types if t != "summary"),
       "every metric has HELP and TYPE; counters, and only they, end in _total", types)
    api = json.loads(urllib.request.urlopen(base + "/api/slices", timeout=5).read())
    ok(api["slices"] and api["slices"][0]["id"] == sid, "/api/slices serves the JSON view", api)
    page = urllib.request.urlopen(base + "/", timeout=5)
    html = page.read().decode()
    ok(page.headers.get("Content-Type", "").startswith("text/html") and "/api/slices" in html and
       "CPU fallback" in html, "/ serves the dashboard page, which polls /api/slices", html[:200])
    try:
        urllib.request.urlopen(base + "/nope", timeout=5)
        code = 200
    except urllib.error.HTTPError as e:
        code = e.code
    ok(code == 404, "unknown paths are 404", code)
    head = urllib.request.urlopen(urllib.request.Request(base + "/metrics", method="HEAD"), timeout=5)
    ok(head.status == 200 and head.read() == b"" and head.headers.get("Content-Type", "").startswith("text/plain"),
       "HEAD answers with the headers and no body", head.status)
    try:
        urllib.request.urlopen(urllib.request.Request(base + "/metrics", data=b"x", method="POST"), timeout=5)
        code, allow = 200, ""
    except urllib.error.HTTPError as e:
        code, allow = e.code, e.headers.get("Allow", "")
    ok(code == 405 and allow == "GET, HEAD", "other methods are 405 Method Not Allowed, with Allow", (code, allow))
    ok(api.get("schema_version") == 1 and api.get("node") and
       re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", api.get("generated_at", "")),
       "the JSON says its schema version, when it was made and on which node",
       {k: api.get(k) for k in ("schema_version", "generated_at", "node")})
srv.terminate()
srv.wait(timeout=5)
ok(srv.returncode == 0, "SIGTERM stops the server cleanly", srv.returncode)
bad = subprocess.run([GS, "monitor", "--listen", "nonsense:x"], capture_output=True, text=True)
ok(bad.returncode == 2 and "HOST:PORT" in bad.stderr, "a bad --listen value is a clear error", bad.stderr)
# Which Pod holds which slice: the kubelet's PodResources (played by grpcio)
# names the device IDs the agent recorded in the slice's alloc file.
sys.path.insert(0, os.path.join(os.environ.get("GS_SRC_DIR", "."), "tests", "agent"))
import fakekubelet as fk  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    dp, pr = fk.load_protos(tmp)
    sock = os.path.join(tmp, "podres.sock")
    podres = fk.PodResources(pr, sock)
    podres.response = pr.ListPodResourcesResponse(pod_resources=[pr.PodResources(
        name="llm", namespace="models", containers=[pr.ContainerResources(name="server", devices=[
            pr.ContainerDevices(resource_name="gpuslice.io/gpu-memory",
                                device_ids=["gpu0-mem-0003", "gpu0-mem-0004"])])])])
    podres.start()
    with open(os.path.join(root, sid, "alloc"), "w") as f:
        f.write("# test\ngpu 0\ndevice gpuslice.io/gpu-memory gpu0-mem-0003\n"
                "device gpuslice.io/gpu-memory gpu0-mem-0004\n")
    j = subprocess.run([GS, "monitor", "--json", "--state-root", root, "--pod-resources-socket", sock],
                       capture_output=True, text=True)
    got = json.loads(j.stdout)["slices"][0] if j.returncode == 0 else {}
    ok(got.get("pod") == "llm" and got.get("namespace") == "models" and got.get("container") == "server",
       "the slice is joined to the Pod and container the kubelet gave its devices to", (got, j.stderr))
    t2 = subprocess.run([GS, "monitor", "--once", "--state-root", root, "--pod-resources-socket", sock],
                        capture_output=True, text=True)
    ok("models/llm/server" in t2.stdout, "the terminal view names namespace/pod/container", t2.stdout)
    podres.stop()
    gone = subprocess.run([GS, "monitor", "--json", "--state-root", root, "--pod-resources-socket", sock],
                          capture_output=True, text=True)
    ok(gone.returncode == 0 and json.loads(gone.stdout)["slices"][0]["pod"] == "",
       "an unreachable kubelet leaves Pods blank, with a warning, and still lists the slices", gone.stderr)
subprocess.run(["rm", "-rf", root])
sys.exit(tap.done())
