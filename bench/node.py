"""The node end to end on a GPU machine, without a kubelet or a container runtime.

The agent (the full `gpuslice` build) serves its resources from the GPU it finds
(NVML), bench/nodepeer plays the kubelet (registration, ListAndWatch, one Allocate
per resource of each container, PodResources), and each tenant starts as a container
would from its Allocate answer: in a private mount namespace (`unshare -m`) where the
answer's mounts are bind mounts (the limits and ledger at /run/gpuslice, the
interposer, /etc/ld.so.preload, the peers' folder) and its environment is set. No
LD_PRELOAD is given: the interposer comes in through /etc/ld.so.preload, as in a Pod.
Without the rights for `unshare -m` it falls back to LD_PRELOAD and GPUSLICE_STATE_DIR,
and says so.

Tenants: model-a fills its slice with PyTorch until torch.OutOfMemoryError and holds
it; model-b runs checked matmuls beside it; cpu-only holds a slice and never touches
CUDA. Then `gpuslice monitor --json` names the Pods, and NVML (nvidia-smi) gives each
process's real memory from outside. Writes OUT/node.json and the logs.

    python3 bench/node.py --gpuslice build/gpuslice --lib build-minimal/libgpuslice.so \\
        --peer build/nodepeer --out OUT

The agent needs its Debian libraries (gRPC, protobuf-c, libyaml, libcurl, cJSON,
libmicrohttpd): --libs DIR puts a folder of them on its library path
(bench/node_libs.sh makes one from Debian's packages).
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import nvml_used_by_pid  # noqa: E402
GiB, MiB = 1 << 30, 1 << 20


def log(msg):
    print("node: " + msg, flush=True)


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    raise SystemExit("node: timed out waiting for " + what)


def can_unshare():
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                          capture_output=True).returncode == 0


# Folders that exist only inside a tenant's container. In the namespace each gets a
# tmpfs first, so the mount targets made in it never appear on the host (a stray
# /run/gpuslice/limits there would put every interposed process on the host in a slice).
PRIVATE_DIRS = ("/run/gpuslice", "/usr/local/lib/gpuslice")


def namespace_script(c, cmd):
    """A shell script that makes the container's mounts in a private mount namespace
    and then runs cmd with the container's environment."""
    lines = ["set -e"]
    for d in PRIVATE_DIRS:
        lines.append('mount -t tmpfs -o size=1m,mode=0755 gs-private "%s"' % d)
    for m in c["mounts"]:
        src, dst = m["host_path"], m["container_path"]
        if not (dst == "/etc/ld.so.preload" or dst.startswith(PRIVATE_DIRS)):
            raise SystemExit("node: unexpected container path %s" % dst)
        make = "mkdir -p" if os.path.isdir(src) else "touch"
        lines.append('[ -e "%s" ] || { mkdir -p "$(dirname "%s")"; %s "%s"; }' % (dst, dst, make, dst))
        lines.append("mount --bind %s %s" % (shlex.quote(src), shlex.quote(dst)))
        if m.get("read_only"):
            lines.append('mount -o remount,bind,ro "%s"' % dst)
    env = " ".join(shlex.quote("%s=%s" % kv) for kv in sorted(c["envs"].items())
                   if kv[0] != "NVIDIA_VISIBLE_DEVICES")
    lines.append("exec env %s %s" % (env, " ".join(shlex.quote(a) for a in cmd)))
    return "\n".join(lines)


def start_tenant(c, cmd, mode, lib, logf, stdin=None, preload=True):
    if not preload:  # the container's mounts without /etc/ld.so.preload: no interposer
        c = dict(c, mounts=[m for m in c["mounts"] if m["container_path"] != "/etc/ld.so.preload"])
    if mode == "namespace":
        argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", namespace_script(c, cmd)]
        env = dict(os.environ)
    else:
        sdir = os.path.dirname(next(m["host_path"] for m in c["mounts"]
                                    if m["container_path"] == "/run/gpuslice/limits"))
        argv = cmd
        env = dict(os.environ, GPUSLICE_STATE_DIR=sdir, **c["envs"])
        if preload:
            env["LD_PRELOAD"] = lib
        env.pop("NVIDIA_VISIBLE_DEVICES", None)
    return subprocess.Popen(argv, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=logf, text=True)


def nvml_procs():
    """Device memory per process (common.nvml_used_by_pid); none without nvidia-smi."""
    return nvml_used_by_pid() if shutil.which("nvidia-smi") else {}


def audit_view(args, state, podres, env, *extra):
    m = subprocess.run([args.gpuslice, "monitor", "--json", "--state-root", state,
                        "--pod-resources-socket", podres, *extra], capture_output=True, text=True, env=env)
    data = json.loads(m.stdout) if m.returncode == 0 and m.stdout.startswith("{") else {}
    return {"top": data.get("audit"), "log": [line for line in m.stderr.splitlines() if "AUDIT" in line],
            "slices": {s.get("pod"): s.get("audit") for s in data.get("slices", [])}}


def rogue(args, answers, mode, state, podres, env, tlog, result):
    """Two tenants in 2 GiB slices that try to hold 6 GiB; the audit before and after kill."""
    prog = os.path.join(HERE, "rogue.py")
    r1 = start_tenant(answers["rogue-ledger"], [sys.executable, prog, "--mode", "ledger", "--mib", "6144"],
                      mode, args.lib, tlog, stdin=subprocess.PIPE)
    r2 = start_tenant(answers["rogue-bypass"], [sys.executable, prog, "--mode", "plain", "--mib", "6144"],
                      mode, args.lib, tlog, stdin=subprocess.PIPE, preload=False)
    result["rogue-ledger"] = json.loads(r1.stdout.readline() or "{}")
    result["rogue-bypass"] = json.loads(r2.stdout.readline() or "{}")
    log("rogue-ledger: %s" % json.dumps(result["rogue-ledger"]))
    log("rogue-bypass: %s" % json.dumps(result["rogue-bypass"]))
    result["nvml_with_rogues"] = {str(k): v for k, v in nvml_procs().items()}
    result["audit"] = audit_view(args, state, podres, env)
    log("audit: %s" % json.dumps(result["audit"])[:2000])
    result["audit_kill"] = audit_view(args, state, podres, env, "--audit", "kill")
    time.sleep(1)
    result["rogues_alive_after_kill"] = {"rogue-ledger": r1.poll() is None, "rogue-bypass": r2.poll() is None}
    log("after --audit kill: %s" % json.dumps(result["rogues_alive_after_kill"]))
    for r in (r1, r2):
        if r.poll() is None:
            r.stdin.close()
            r.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpuslice", required=True, help="the full build's gpuslice (agent, monitor)")
    ap.add_argument("--lib", required=True, help="libgpuslice.so for the tenants")
    ap.add_argument("--peer", required=True, help="bench/nodepeer's binary")
    ap.add_argument("--libs", default="", help="folder of the agent's Debian libraries")
    ap.add_argument("--backend", default="nvml", help="the agent's backend (default nvml)")
    ap.add_argument("--units", default="16,16,4", help="memory units (256 MiB) of model-a, model-b, cpu-only")
    ap.add_argument("--work", type=int, default=300, help="model-b's matmul rounds")
    ap.add_argument("--rogue", action="store_true",
                    help="also two tenants that try to exceed a 2 GiB slice (bench/rogue.py): one "
                         "writes its ledger, one runs without the interposer; the audit's view "
                         "of each, then --audit kill")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gs-node-")
    dp_dir, state = os.path.join(tmp, "dp"), os.path.join(tmp, "state")
    os.makedirs(dp_dir)
    podres = os.path.join(tmp, "podres.sock")
    alloc = os.path.join(tmp, "alloc.json")
    env = dict(os.environ)
    paths = [p for p in (os.path.abspath(args.libs) if args.libs else "", "/usr/local/nvidia/lib64", env.get("LD_LIBRARY_PATH", "")) if p]
    env["LD_LIBRARY_PATH"] = ":".join(paths)
    result = {"backend": args.backend}
    ua, ub, uc = (int(x) for x in args.units.split(","))
    spec = ("model-a:gpuslice.io/gpu-memory=%d,gpuslice.io/gpu-compute=30;"
            "model-b:gpuslice.io/gpu-memory=%d,gpuslice.io/gpu-compute=70;"
            "cpu-only:gpuslice.io/gpu-memory=%d" % (ua, ub, uc))
    if args.rogue:
        spec += ";rogue-ledger:gpuslice.io/gpu-memory=8;rogue-bypass:gpuslice.io/gpu-memory=8"
    peer_log = open(os.path.join(args.out, "peer.log"), "w")
    agent_log = open(os.path.join(args.out, "agent.log"), "w")
    peer = subprocess.Popen([args.peer, "-dir", dp_dir, "-podres", podres, "-want", "3",
                             "-containers", spec, "-out", alloc], stdout=peer_log, stderr=subprocess.STDOUT)
    agent = None
    tenants = []
    created = []
    try:
        wait_for(lambda: os.path.exists(os.path.join(dp_dir, "kubelet.sock")), 20, "the peer's kubelet.sock")
        agent = subprocess.Popen([args.gpuslice, "agent", "--backend", args.backend, "--kubelet-dir", dp_dir,
                                  "--state-root", state, "--interposer-path", os.path.abspath(args.lib),
                                  "--pod-resources-socket", podres, "--reclaim-interval", "0",
                                  "--log-level", "info"], stdout=agent_log, stderr=subprocess.STDOUT, env=env)
        wait_for(lambda: os.path.exists(alloc) or peer.poll() is not None or agent.poll() is not None, 90,
                 "the Allocate answers")
        if not os.path.exists(alloc):
            raise SystemExit("node: no Allocate answers (see peer.log and agent.log in %s)" % args.out)
        with open(alloc) as f:
            answers = {c["name"]: c for c in json.load(f)}
        result["allocate"] = answers
        node = {}
        with open(os.path.join(state, "_agent", "node")) as f:
            for line in f:
                k, _, v = line.partition("=")
                if v:
                    node[k.strip()] = v.strip()
        result["node_file"] = node
        log("agent: %s, GPU 0 %s, %s bytes, UUID %s" % (node.get("backend"), node.get("gpu0.name"),
                                                         node.get("gpu0.memory"), node.get("gpu0.uuid")))
        mode = "namespace" if can_unshare() else "env"
        result["tenant_mode"] = mode
        log("tenants start %s" % ("in private mount namespaces (unshare -m), the interposer through "
                                   "/etc/ld.so.preload" if mode == "namespace" else
                                   "with LD_PRELOAD and GPUSLICE_STATE_DIR (unshare -m is not allowed here)"))
        # Mount points on the host: two empty folders and, where the host has none, an
        # empty /etc/ld.so.preload (an empty preload file preloads nothing). Removed at the end.
        created = [p for p in ("/etc/ld.so.preload",) + PRIVATE_DIRS if not os.path.exists(p)]
        if mode == "namespace":
            for p in created:
                if p == "/etc/ld.so.preload":
                    open(p, "a").close()
                else:
                    os.makedirs(p)
        tlog = open(os.path.join(args.out, "tenants.log"), "w")
        alloc_py = os.path.join(HERE, "torch_alloc.py")
        a = start_tenant(answers["model-a"], [sys.executable, alloc_py, "--hold"], mode, args.lib, tlog,
                         stdin=subprocess.PIPE)
        tenants.append(a)
        result["model-a"] = json.loads(a.stdout.readline() or "{}")
        log("model-a: %s" % json.dumps(result["model-a"]))
        b = start_tenant(answers["model-b"], [sys.executable, alloc_py, "--work", str(args.work)], mode,
                         args.lib, tlog)
        result["model-b"] = json.loads(b.stdout.readline() or "{}")
        b.wait()
        log("model-b: %s" % json.dumps(result["model-b"]))
        c = start_tenant(answers["cpu-only"], [sys.executable, "-c",
                                               "print(open('/proc/self/maps').read().count('libgpuslice'))"],
                         mode, args.lib, tlog)
        result["cpu-only_maps_lines"] = (c.stdout.read() or "").strip()
        c.wait()
        result["nvml_per_process"] = {str(k): v for k, v in nvml_procs().items()}
        m = subprocess.run([args.gpuslice, "monitor", "--json", "--state-root", state,
                            "--pod-resources-socket", podres], capture_output=True, text=True, env=env)
        result["monitor"] = json.loads(m.stdout) if m.returncode == 0 else {"error": m.stderr}
        log("monitor: %s" % json.dumps(result["monitor"])[:1500])
        a.stdin.close()
        a.wait()
        if args.rogue:
            rogue(args, answers, mode, state, podres, env, tlog, result)
    finally:
        for p in created:
            if os.path.isdir(p):
                os.rmdir(p)
            elif os.path.exists(p) and os.path.getsize(p) == 0:
                os.unlink(p)
        for t in tenants:
            if t.poll() is None:
                t.kill()
        if agent is not None and agent.poll() is None:
            agent.terminate()
            agent.wait(timeout=10)
        peer.terminate()
        peer.wait(timeout=10)
        agent_log.close()
        peer_log.close()
        with open(os.path.join(args.out, "node.json"), "w") as f:
            json.dump(result, f, indent=1)
        shutil.rmtree(tmp, ignore_errors=True)
    log("results in %s" % os.path.join(args.out, "node.json"))


if __name__ == "__main__":
    main()
