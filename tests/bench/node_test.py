"""bench/node.py without a GPU: the agent on the simulated backend, bench/nodepeer (built
here with Debian's grpc-go) as the kubelet, tenants in private mount namespaces with the
real interposer and the simulated GPU, a stand-in torch that allocates through the driver
API (tests/bench/cudatorch). Skips (77) without Go, Debian's grpc-go, root or unshare."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Tap  # noqa: E402

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SRC, "build"))
GiB = 1 << 30


def main():
    if (not shutil.which("go") or not os.path.isdir("/usr/share/gocode/src/google.golang.org/grpc")
            or os.geteuid() != 0 or not shutil.which("unshare")):
        print("1..0 # SKIP needs root, unshare, go and golang-google-grpc-dev")
        return 77
    if os.environ.get("SAN"):
        # The tenants are python3, and a sanitizer-built interposer cannot be preloaded
        # into a program built without the sanitizer.
        print("1..0 # SKIP sanitizer build (SAN=%s)" % os.environ["SAN"])
        return 77
    host_paths = ("/etc/ld.so.preload", "/run/gpuslice", "/usr/local/lib/gpuslice")
    before = [os.path.exists(h) for h in host_paths]
    t = Tap()
    tmp = tempfile.mkdtemp(prefix="gs-node-test-")
    try:
        peer = os.path.join(tmp, "nodepeer")
        b = subprocess.run(["sh", os.path.join(SRC, "bench", "nodepeer", "build.sh"), peer],
                           capture_output=True, text=True, timeout=300)
        t.ok(b.returncode == 0, "bench/nodepeer builds offline into one binary", b.stdout + b.stderr)
        env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "cudatorch"),
                   LD_LIBRARY_PATH=os.path.join(BUILD, "sim"))
        out = os.path.join(tmp, "out")
        p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "node.py"), "--gpuslice",
                            os.path.join(BUILD, "gpuslice"), "--lib", os.path.join(BUILD, "libgpuslice.so"),
                            "--peer", peer, "--backend", "simulated", "--work", "3", "--out", out],
                           env=env, capture_output=True, text=True, timeout=300)
        t.ok(p.returncode == 0, "bench/node.py runs the node on the simulated GPU", p.stdout + p.stderr)
        r = json.load(open(os.path.join(out, "node.json"))) if os.path.exists(os.path.join(out, "node.json")) else {}
        t.ok(r.get("tenant_mode") == "namespace" and r.get("node_file", {}).get("backend") == "simulated",
             "tenants in private mount namespaces; the agent's node file read", r.get("tenant_mode"))
        a, b_ = r.get("model-a", {}), r.get("model-b", {})
        t.ok(a.get("clean_oom") and a.get("allocated_bytes") == 4 * GiB and a.get("mem_get_info_total") == 4 * GiB,
             "model-a, through /etc/ld.so.preload alone, is held to its 4 GiB slice", a)
        t.ok(b_.get("work_ok") and b_.get("mem_get_info_total") == 4 * GiB, "model-b works beside it", b_)
        t.ok(int(r.get("cpu-only_maps_lines") or 0) > 0, "cpu-only has the interposer loaded",
             r.get("cpu-only_maps_lines"))
        sl = {s.get("pod"): s for s in r.get("monitor", {}).get("slices", [])}
        t.ok(sl.get("model-a", {}).get("used_bytes") == 4 * GiB and sl["model-a"].get("processes") == 1
             and sl.get("model-b", {}).get("cuda_seen") and sl.get("cpu-only", {}).get("cuda_seen") is False,
             "the monitor names the three Pods: model-a holding 4 GiB, cpu-only never on CUDA", sl)
        t.ok([os.path.exists(h) for h in host_paths] == before,
             "the host's /etc/ld.so.preload, /run/gpuslice, /usr/local/lib/gpuslice are as they were",
             list(zip(host_paths, before)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
