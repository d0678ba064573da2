#!/bin/sh
# Measures the agent's footprint: resident memory and idle CPU with one
# simulated GPU and 20 slices allocated, plus Allocate latency, against the
# Python kubelet of tests/agent. Prints one line per figure (docs/benchmarks.md).
# Needs the full build (make) and Python's grpcio; no GPU. With NODEPEER set to
# bench/nodepeer's binary (bench/nodepeer/build.sh), also Allocate's latency
# from a grpc-go client, as the kubelet's: Python's client adds about 1 ms.
#   [NODEPEER=build/nodepeer] bench/agent_footprint.sh [BUILD_DIR] [IDLE_SECONDS]
#   (defaults: build, 30)
set -eu
case "${1:-}" in -h|--help) sed -n '2,6p' "$0" | cut -c3-; exit 0 ;; esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
IDLE=${2:-30}
GS_SRC_DIR=$SRC GS_BUILD_DIR=$BUILD IDLE=$IDLE exec /usr/bin/python3 - <<'PY'
import os, statistics, subprocess, sys, tempfile, time, shutil
sys.path.insert(0, os.path.join(os.environ["GS_SRC_DIR"], "tests", "agent"))
import fakekubelet as fk

tmp = tempfile.mkdtemp(prefix="gsb", dir="/tmp")
kdir = os.path.join(tmp, "dp"); os.makedirs(kdir)
lib = os.path.join(tmp, "lib.so"); open(lib, "w").close()
dp, pr = fk.load_protos(tmp)
kub = fk.Kubelet(dp, kdir); kub.start()
log = open(os.path.join(tmp, "agent.log"), "wb")
agent = subprocess.Popen([os.path.join(fk.BUILD, "gpuslice"), "agent", "--backend", "simulated",
                          "--kubelet-dir", kdir, "--state-root", os.path.join(tmp, "state"),
                          "--interposer-path", lib, "--reclaim-interval", "0", "--log-level", "warn"],
                         stdout=log, stderr=log)
try:
    regs = kub.wait_registrations(3)
    ep = {r[1].resource_name: r[1].endpoint for r in regs}
    mem = fk.Plugin(dp, os.path.join(kdir, ep["gpuslice.io/gpu-memory"]))
    cpt = fk.Plugin(dp, os.path.join(kdir, ep["gpuslice.io/gpu-compute"]))
    q, _ = mem.watch(); q.get(timeout=5)
    lat = []
    for i in range(20):  # 20 slices: 1 memory unit + 4% compute each
        t0 = time.monotonic()
        mem.allocate(["gpu0-mem-%04d" % i])
        lat.append((time.monotonic() - t0) * 1000)
        cpt.allocate(["gpu0-pct-%03d" % (i * 4 + k) for k in range(4)])
        time.sleep(0.01)
    slices = len([d for d in os.listdir(os.path.join(tmp, "state")) if d.startswith("gs-")])
    def status(key):
        for line in open("/proc/%d/status" % agent.pid):
            if line.startswith(key + ":"):
                return int(line.split()[1])
    def cpu_and_wakes():
        # Every thread's time on a CPU in ns (schedstat; the clock-tick
        # counters of /proc/PID/stat are too coarse for an idle daemon) and
        # its voluntary context switches (how often it woke up).
        ns = wakes = 0
        tdir = "/proc/%d/task" % agent.pid
        for t in os.listdir(tdir):
            try:
                ns += int(open(os.path.join(tdir, t, "schedstat")).read().split()[0])
                for line in open(os.path.join(tdir, t, "status")):
                    if line.startswith("voluntary_ctxt_switches:"):
                        wakes += int(line.split()[1])
            except OSError:
                pass
        return ns, wakes
    time.sleep(3)  # past the malloc_trim that follows the last call
    idle = float(os.environ["IDLE"])
    t0, (c0, w0) = time.monotonic(), cpu_and_wakes()
    time.sleep(idle)
    t1, (c1, w1) = time.monotonic(), cpu_and_wakes()
    cpu_pct = (c1 - c0) / 1e9 / (t1 - t0) * 100
    print("slices: %d (1 simulated GPU, 16 GiB)" % slices)
    print("rss_kib: %d (VmRSS; VmHWM %d KiB)" % (status("VmRSS"), status("VmHWM")))
    print("idle_cpu_percent: %.4f (over %.0f s, all threads, schedstat)" % (cpu_pct, t1 - t0))
    print("idle_wakeups_per_s: %.2f (voluntary context switches, all threads)" % (
        (w1 - w0) / (t1 - t0)))
    print("threads: %d" % status("Threads"))
    ls = sorted(lat)
    print("allocate_ms: p50 %.2f p95 %.2f max %.2f (n=%d, Python grpcio client, same host)" % (
        statistics.median(ls), ls[int(len(ls) * 0.95) - 1], ls[-1], len(ls)))
    mem.close(); cpt.close()
finally:
    agent.terminate(); agent.wait(timeout=10)
    kub.stop()
    shutil.rmtree(tmp, ignore_errors=True)

peer = os.environ.get("NODEPEER")
if peer:
    # The same 40 Allocate calls from grpc-go, against a fresh agent.
    tmp = tempfile.mkdtemp(prefix="gsb", dir="/tmp")
    kdir = os.path.join(tmp, "dp"); os.makedirs(kdir)
    lib = os.path.join(tmp, "lib.so"); open(lib, "w").close()
    spec = ";".join("c%d:gpuslice.io/gpu-memory=1,gpuslice.io/gpu-compute=4" % i for i in range(20))
    p = subprocess.Popen([peer, "-dir", kdir, "-want", "3", "-containers", spec,
                          "-out", os.path.join(tmp, "out.json")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(0.3)  # its kubelet.sock first, as a kubelet's
    agent = subprocess.Popen([os.path.join(fk.BUILD, "gpuslice"), "agent", "--backend", "simulated",
                              "--kubelet-dir", kdir, "--state-root", os.path.join(tmp, "state"),
                              "--interposer-path", lib, "--reclaim-interval", "0",
                              "--log-level", "warn"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # nodepeer keeps serving (as a kubelet would) until it is stopped: read
        # until its figures, then stop it.
        seen, line = [], None
        for x in p.stdout:
            seen.append(x)
            if "Allocate p50" in x:
                line = x.strip()
                break
        print("allocate_ms_go: " + (line.split("Allocate ", 1)[1] if line else
                                    "FAILED: " + "".join(seen)[-300:]))
    finally:
        p.terminate(); p.wait(timeout=10)
        agent.terminate(); agent.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
PY
