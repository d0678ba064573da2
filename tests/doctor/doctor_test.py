#!/usr/bin/python3
"""gpuslice doctor against fixture node roots and a fake API server; TAP output.

Each fixture under tests/doctor/fixtures/ is copied to a temporary folder (so
sockets and state dirs made at test time never land in the source tree), then
changed for the case at hand ("variants": a file removed, a line rewritten),
and `gpuslice doctor --root <copy> --json` must report the exact finding ids
and fixes. The cluster cases run tests/doctor/fake_apiserver.py over TLS with
a throwaway CA made by the openssl command.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SRC, "build"))
GPUSLICE = os.path.join(BUILD, "gpuslice")
FIXTURES = os.path.join(HERE, "fixtures")

_n = 0
_failed = 0


def tap(ok, name, diag=""):
    global _n, _failed
    _n += 1
    if not ok:
        _failed += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", _n, name))
    if not ok and diag:
        for line in str(diag).splitlines()[-80:]:
            print("# " + line)
    sys.stdout.flush()


class Node:
    """A fixture copied to a temp dir, with kubelet sockets made as asked."""

    def __init__(self, fixture, sockets=("kubelet", "plugin", "podresources"), stale=()):
        self.tmp = tempfile.mkdtemp(prefix="gsdoc")
        self.root = os.path.join(self.tmp, "r")
        shutil.copytree(os.path.join(FIXTURES, fixture), self.root, symlinks=True)
        self.socks = []
        dp = self.path("/var/lib/kubelet/device-plugins")
        pr = self.path("/var/lib/kubelet/pod-resources")
        os.makedirs(dp, exist_ok=True)
        os.makedirs(pr, exist_ok=True)
        names = {"kubelet": os.path.join(dp, "kubelet.sock"),
                 "plugin": os.path.join(dp, "gpuslice-gpu-memory.sock"),
                 "podresources": os.path.join(pr, "kubelet.sock")}
        for key in sockets:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(names[key])
            if key in stale:
                s.close()  # the file stays, nobody listens: a dead plugin
            else:
                s.listen(8)
                self.socks.append(s)

    def path(self, abs_path):
        return self.root + abs_path

    def write(self, abs_path, text, mtime=None):
        p = self.path(abs_path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        if mtime is not None:
            os.utime(p, (mtime, mtime))

    def remove(self, abs_path):
        p = self.path(abs_path)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.unlink(p)

    def replace(self, abs_path, old, new):
        p = self.path(abs_path)
        with open(p) as f:
            text = f.read()
        assert old in text, "%s lacks %r" % (abs_path, old)
        with open(p, "w") as f:
            f.write(text.replace(old, new))

    def slice(self, sid, memory, age_s, cuda_used, pid=0, sharing="timeslice"):
        """A slice state dir: limits (key = value) and a ledger (the ABI of src/contract/ledger.h)."""
        d = self.path("/var/lib/gpuslice/slices/" + sid)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "limits"), "w") as f:
            f.write("version = 1\nmemory = %d\ncompute = 30\ncompute_mode = share\n"
                    "priority = best-effort\ncontext_reserve = 0\nsimulated = false\n"
                    "device = 0\nslice_id = %s\nsharing = %s\n" % (memory, sid, sharing))
        now = time.time()
        first_ctx = int((now - age_s / 2) * 1e9) if cuda_used else 0
        header = struct.pack("<8sIIIIQQQQ", b"GSLEDGER", 1, 128 + 64 * 256, 256, 0, 0,
                             first_ctx, first_ctx, 0) + b"\0" * (9 * 8)
        slots = bytearray(64 * 256)
        if cuda_used:
            struct.pack_into("<iIQQQQQQQ", slots, 0, pid, 0, 0, 1 << 20, 1 << 20, 1, 0, 10,
                             first_ctx)
        with open(os.path.join(d, "ledger"), "wb") as f:
            f.write(header + bytes(slots))
        t = now - age_s
        for name in ("limits", "ledger"):
            os.utime(os.path.join(d, name), (t, t))
        os.utime(d, (t, t))

    def close(self):
        for s in self.socks:
            s.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def doctor(node, *args, json_out=True, env=None):
    cmd = [GPUSLICE, "doctor"]
    if node is not None:
        cmd += ["--root", node.root]
    cmd += list(args)
    if json_out:
        cmd.append("--json")
    e = dict(os.environ)
    e.pop("KUBECONFIG", None)
    e.pop("KUBERNETES_SERVICE_HOST", None)
    e.pop("NODE_NAME", None)
    if env:
        e.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=60)
    report = None
    if json_out and p.returncode in (0, 1):
        try:
            report = json.loads(p.stdout)
        except ValueError:
            report = None
    return p, report


def ids(report, sev=None):
    return [f["id"] for f in report["findings"] if sev is None or f["severity"] == sev]


def find(report, fid):
    return [f for f in report["findings"] if f["id"] == fid]


def show(p, report=None):
    return "exit %d\nstderr: %s\n%s" % (p.returncode, p.stderr[-2000:],
                                       json.dumps(report, indent=1)[-6000:] if report else p.stdout[-4000:])


def expect_healthy(name, node, *args):
    p, r = doctor(node, *args)
    bad = [f for f in (r or {"findings": []})["findings"] if f["severity"] in ("error", "warn")]
    tap(r is not None and p.returncode == 0 and r["healthy"] and not bad, name, show(p, r))
    return r


def expect_finding(name, node, fid, fix_has=(), sev="error", args=(), exit_code=None):
    """The report holds fid with severity sev, and its fix names each string of fix_has."""
    p, r = doctor(node, *args)
    if exit_code is None:
        exit_code = 1 if sev == "error" else None
    ok = r is not None
    fs = find(r, fid) if ok else []
    ok = ok and len(fs) > 0 and all(f["severity"] == sev for f in fs)
    ok = ok and all(any(s in (f["fix"] or "") for f in fs) for s in fix_has)
    ok = ok and all(f["evidence"] for f in fs if sev != "ok")
    if exit_code is not None:
        ok = ok and p.returncode == exit_code
    tap(ok, name, show(p, r))
    return r


# ---------------------------------------------------------------- node, runtime, kubelet


def test_healthy_nodes():
    n = Node("k3s-discrete")
    r = expect_healthy("healthy K3s node with a discrete GPU reports healthy", n, "--skip-cluster")
    if r:
        want = {"node.platform", "node.device-nodes", "node.kernel-modules", "node.driver-library",
                "runtime.nvidia-handler", "runtime.cdi-spec", "kubelet.plugin-socket",
                "kubelet.socket", "kubelet.podresources"}
        tap(want <= set(ids(r, "ok")), "healthy K3s node: every check group says ok",
            sorted(set(want) - set(ids(r, "ok"))))
        tap("cluster.skipped" in ids(r, "info"), "--skip-cluster says the cluster checks were skipped",
            ids(r))
    n.close()

    n = Node("jetson-orin")
    r = expect_healthy("healthy Jetson Orin Nano (K3s, containerd 1.7) reports healthy", n,
                       "--skip-cluster")
    if r:
        plat = find(r, "node.platform")
        title = plat[0]["title"] if plat else ""
        tap("Orin Nano" in title and "L4T 36.4.3" in title and "unified memory" in title,
            "Jetson: board model and L4T version from the device tree and nv_tegra_release", title)
        tap("runtime.cdi-disabled" in ids(r, "info"),
            "Jetson on containerd 1.7: CDI off is reported as info", ids(r))
    n.close()

    n = Node("containerd-discrete")
    r = expect_healthy("healthy plain containerd node (nvidia-ctk drop-in imported) reports healthy",
                       n, "--skip-cluster")
    if r:
        ev = " ".join(find(r, "runtime.nvidia-handler")[0]["evidence"]) if find(
            r, "runtime.nvidia-handler") else ""
        tap("/etc/containerd/conf.d/99-nvidia.toml" in ev,
            "plain containerd: the handler is found in the imported drop-in", ev)
    n.close()


def test_trap_missing_plugin_node():
    n = Node("k3s-discrete", sockets=("kubelet", "podresources"))
    expect_finding("trap 1 (missing device plugin): no gpuslice.sock is an error naming the agent",
                   n, "kubelet.plugin-socket-missing", fix_has=("gpuslice agent",),
                   args=("--skip-cluster",))
    n.close()
    n = Node("k3s-discrete", stale=("plugin",))
    expect_finding("a plugin socket nobody listens on is reported as stale", n,
                   "kubelet.plugin-socket-stale", fix_has=("gpuslice agent",),
                   args=("--skip-cluster",))
    n.close()
    n = Node("k3s-discrete", sockets=("plugin", "podresources"))
    expect_finding("no kubelet.sock: the kubelet is not running", n, "kubelet.socket-missing",
                   fix_has=("--kubelet-dir",), args=("--skip-cluster",))
    n.close()
    n = Node("k3s-discrete", sockets=("kubelet", "plugin"))
    expect_finding("no PodResources socket is a warning", n, "kubelet.podresources-missing",
                   sev="warn", args=("--skip-cluster",), exit_code=0)
    n.close()
    # NVIDIA's plugin serving beside the agent's fractional mode (its socket name, listening).
    n = Node("k3s-discrete")
    nv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    nv.bind(n.path("/var/lib/kubelet/device-plugins/nvidia-gpu.sock"))
    nv.listen(1)
    n.socks.append(nv)
    r = expect_finding("NVIDIA's device plugin registered beside gpuslice is a warning: one of the two per node",
                       n, "kubelet.nvidia-plugin-present", sev="warn", args=("--skip-cluster",), exit_code=0,
                       fix_has=("nvidia.com/gpu.deploy.device-plugin=false", "deploy/overlays/replica"))
    ev = " ".join(f for x in find(r, "kubelet.nvidia-plugin-present") for f in x["evidence"]) if r else ""
    tap("someone listens" in ev, "and its evidence says the socket is alive", ev)
    n.close()


def test_trap_runtime():
    n = Node("trap-k3s-runtime")
    r = expect_finding("trap 2 (wrong runtime config) on K3s: nvidia-ctk wrote /etc/containerd, "
                       "fix is restarting K3s", n, "runtime.nvidia-config-wrong-file",
                       fix_has=("sudo systemctl restart k3s",), args=("--skip-cluster",))
    if r:
        ev = " ".join(find(r, "runtime.nvidia-config-wrong-file")[0]["evidence"])
        tap("/etc/containerd/config.toml" in ev and
            "/var/lib/rancher/k3s/agent/etc/containerd/config.toml" in ev,
            "trap 2 evidence names the file with the runtime and the file K3s reads", ev)
    n.close()

    n = Node("trap-k3s-runtime")
    n.remove("/etc/containerd")
    n.remove("/usr/bin/nvidia-container-runtime")
    expect_finding("K3s without the toolkit: fix installs nvidia-container-toolkit and restarts",
                   n, "runtime.nvidia-handler-missing",
                   fix_has=("apt-get install nvidia-container-toolkit", "systemctl restart k3s"),
                   args=("--skip-cluster",))
    n.close()

    n = Node("trap-k3s-runtime")
    n.remove("/etc/containerd")
    n.write("/etc/systemd/system/k3s-agent.service", "[Service]\n")
    expect_finding("K3s agent, toolkit installed after start: fix restarts k3s-agent", n,
                   "runtime.nvidia-handler-missing", fix_has=("sudo systemctl restart k3s-agent",),
                   args=("--skip-cluster",))
    n.close()

    n = Node("trap-containerd-runtime")
    expect_finding("trap 2 on plain containerd: the nvidia drop-in is not imported", n,
                   "runtime.nvidia-config-wrong-file",
                   fix_has=('imports = ["/etc/containerd/conf.d/*.toml"]',
                            "sudo systemctl restart containerd"), args=("--skip-cluster",))
    n.close()

    n = Node("trap-containerd-runtime")
    n.remove("/etc/containerd/conf.d")
    expect_finding("plain containerd without a handler: fix is nvidia-ctk runtime configure", n,
                   "runtime.nvidia-handler-missing",
                   fix_has=("sudo nvidia-ctk runtime configure --runtime=containerd "
                            "--config=/etc/containerd/config.toml",), args=("--skip-cluster",))
    n.close()

    n = Node("k3s-discrete")
    n.replace("/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
              '"/usr/bin/nvidia-container-runtime"', '"/opt/gone/nvidia-container-runtime"')
    expect_finding("a handler whose BinaryName does not exist is an error", n,
                   "runtime.nvidia-binary-missing", fix_has=("nvidia-container-toolkit",),
                   args=("--skip-cluster",))
    n.close()

    n = Node("k3s-discrete")
    n.replace("/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
              "[plugins.'io.containerd.cri.v1.runtime'.cni]", "[plugins.'io.containerd.cri.v1.runtime'.cni")
    r = expect_finding("an unparsable containerd config is an error with file and line", n,
                       "runtime.config-unparsable", args=("--skip-cluster",))
    if r and find(r, "runtime.config-unparsable"):
        ev = find(r, "runtime.config-unparsable")[0]["evidence"][0]
        tap("config.toml:29:" in ev, "the parse error names the line", ev)
    n.close()

    n = Node("k3s-discrete")
    n.write("/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.tmpl",
            '{{ template "base" . }}\n\n[plugins.\'io.containerd.cri.v1.runtime\'.containerd]\n'
            '  default_runtime_name = "nvidia"\n', mtime=time.time() + 60)
    expect_finding("a template newer than the generated config says restart K3s", n,
                   "runtime.template-newer", sev="warn", fix_has=("systemctl restart k3s",),
                   args=("--skip-cluster",), exit_code=0)
    n.close()

    n = Node("k3s-discrete")
    n.remove("/dev/nvidia-uvm-tools")
    expect_finding("a CDI spec naming a missing device node is stale", n, "runtime.cdi-spec-stale",
                   sev="warn", fix_has=("nvidia-ctk cdi generate",), args=("--skip-cluster",),
                   exit_code=0)
    n.close()

    n = Node("k3s-discrete")
    n.remove("/etc/cdi")
    expect_finding("containerd 2 with CDI on but no spec: generate one", n,
                   "runtime.cdi-spec-missing", sev="warn",
                   fix_has=("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",),
                   args=("--skip-cluster",), exit_code=0)
    n.close()

    n = Node("k3s-discrete")
    n.write("/etc/cdi/broken.yaml", "kind: [unclosed\n")
    expect_finding("an unparsable CDI spec is reported", n, "runtime.cdi-spec-invalid", sev="warn",
                   args=("--skip-cluster",), exit_code=0)
    n.close()

    n = Node("jetson-orin")
    n.replace("/etc/nvidia-container-runtime/config.toml", 'mode = "auto"', 'mode = "legacy"')
    expect_finding("Jetson with nvidia-container-runtime mode legacy: set csv", n,
                   "runtime.toolkit-mode-wrong",
                   fix_has=("nvidia-ctk config --in-place --set nvidia-container-runtime.mode=csv",),
                   args=("--skip-cluster",))
    n.close()

    n = Node("jetson-orin")
    n.remove("/etc/nvidia-container-runtime/host-files-for-container.d")
    expect_finding("Jetson without CSV file lists or CDI spec: nothing gets mounted", n,
                   "runtime.toolkit-csv-missing", fix_has=("nvidia-container",),
                   args=("--skip-cluster",))
    n.close()


def test_node_traps():
    n = Node("k3s-discrete")
    n.remove("/dev/nvidia-uvm")
    n.write("/proc/modules", "nvidia 56705024 0 - Live 0x0000000000000000 (PO)\n")
    r = expect_finding("no /dev/nvidia-uvm: fix is nvidia-modprobe -u", n, "node.nvidia-uvm-missing",
                       fix_has=("sudo nvidia-modprobe -u -c=0",), args=("--skip-cluster",))
    if r:
        tap("node.kernel-module-missing" in ids(r, "error"), "nvidia_uvm not loaded is reported",
            ids(r))
    n.close()

    n = Node("k3s-discrete")
    n.remove("/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    expect_finding("no libcuda.so.1: install the driver's user-space", n,
                   "node.driver-library-missing", fix_has=("libnvidia-compute",),
                   args=("--skip-cluster",))
    n.close()

    n = Node("jetson-orin")
    for dev in ("/dev/nvhost-ctrl-gpu", "/dev/nvgpu"):
        n.remove(dev)
    n.write("/proc/modules", "nvmap 204800 75 - Live 0x0000000000000000 (O)\n")
    r = expect_finding("Jetson without nvgpu nodes: fix loads nvgpu", n, "node.device-node-missing",
                       fix_has=("sudo modprobe nvgpu",), args=("--skip-cluster",))
    if r:
        tap("node.kernel-module-missing" in ids(r, "error"), "Jetson: nvgpu not loaded is reported",
            ids(r))
    n.close()

    n = Node("jetson-orin")
    n.remove("/proc/device-tree")
    expect_finding("Jetson signs without a device tree is a warning", n, "node.device-tree-missing",
                   sev="warn", args=("--skip-cluster",), exit_code=0)
    n.close()

    empty = tempfile.mkdtemp(prefix="gsdoc")
    p, r = doctor(None, "--root", empty, "--skip-cluster")
    tap(r is not None and p.returncode == 1 and "node.gpu-missing" in ids(r, "error") and
        "runtime.not-found" in ids(r, "warn"), "an empty root: no GPU, no runtime", show(p, r))
    shutil.rmtree(empty)


def test_cli():
    n = Node("k3s-discrete", sockets=("kubelet", "podresources"))
    p, _ = doctor(n, "--skip-cluster", json_out=False)
    out = p.stdout
    tap(p.returncode == 1 and "Kubelet" in out and "(kubelet.plugin-socket-missing)" in out and
        "fix:" in out and "evidence:" in out and "something is wrong" in out,
        "the human report groups by area and shows evidence and fix", out[-3000:])
    n.close()
    p, _ = doctor(None, "--bogus", json_out=False)
    tap(p.returncode == 2 and "--bogus" in p.stderr, "an unknown option exits 2", p.stderr)
    p, _ = doctor(None, "--root", "/nonexistent/gs", json_out=False)
    tap(p.returncode == 2 and "not a directory" in p.stderr, "a missing --root exits 2", p.stderr)
    p, _ = doctor(None, "--grace", "x", json_out=False)
    tap(p.returncode == 2 and "--grace" in p.stderr, "a bad --grace exits 2", p.stderr)
    p, _ = doctor(None, "--help", json_out=False)
    tap(p.returncode == 0 and "--root DIR" in p.stdout, "--help lists the options", p.stdout)



# ---------------------------------------------------------------- cluster (fake API server)

CERTS = {}


def certs():
    """A throwaway self-signed CA/server certificate for 127.0.0.1, and a second, unrelated one."""
    if CERTS:
        return CERTS
    d = tempfile.mkdtemp(prefix="gscert")
    for name in ("server", "other"):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", os.path.join(d, name + ".key"),
                        "-out", os.path.join(d, name + ".crt")],
                       check=True, capture_output=True)
    CERTS.update(dir=d, crt=os.path.join(d, "server.crt"), key=os.path.join(d, "server.key"),
                 other=os.path.join(d, "other.crt"))
    return CERTS


class ApiServer:
    TOKEN = "doctor-test-token"

    def __init__(self, scenario, page=0):
        c = certs()
        self.dir = tempfile.mkdtemp(prefix="gsapi")
        sc = os.path.join(self.dir, "scenario.json")
        with open(sc, "w") as f:
            json.dump(scenario, f)
        self.log = os.path.join(self.dir, "requests.log")
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, "fake_apiserver.py"), "--cert", c["crt"],
             "--key", c["key"], "--scenario", sc, "--token", self.TOKEN, "--log", self.log,
             "--page", str(page)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.port = int(line.split()[1])
        self.url = "https://127.0.0.1:%d" % self.port

    def kubeconfig(self, ca=None, token=None, extra_user=""):
        import base64
        with open(ca or certs()["crt"], "rb") as f:
            ca_data = base64.b64encode(f.read()).decode()
        path = os.path.join(self.dir, "kubeconfig-%d" % len(os.listdir(self.dir)))
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                    "clusters:\n- name: c\n  cluster:\n    server: %s\n"
                    "    certificate-authority-data: %s\n"
                    "contexts:\n- name: other\n  context: {cluster: nope, user: nope}\n"
                    "- name: test\n  context:\n    cluster: c\n    user: u\n"
                    "users:\n- name: u\n  user:\n    token: %s\n%s"
                    % (self.url, ca_data, token or self.TOKEN, extra_user))
        return path

    def requests(self):
        try:
            with open(self.log) as f:
                return f.read().splitlines()
        except OSError:
            return []

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def k8s_node(name, alloc, labels=None, memory="65536000Ki"):
    a = {"cpu": "8", "memory": memory, "pods": "110"}
    a.update({k: str(v) for k, v in alloc.items()})
    return {"metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": a, "capacity": dict(a)}}


def k8s_pod(name, req, node=None, phase="Running", runtime_class=None, ns="default", memory=None,
            init_req=None):
    res = {"limits": {k: str(v) for k, v in req.items()}}
    if memory is not None:
        res["requests"] = {"memory": memory}
    spec = {"containers": [{"name": "main", "image": "x", "resources": res}]}
    if init_req:
        spec["initContainers"] = [{"name": "init", "resources": {
            "limits": {k: str(v) for k, v in init_req.items()}}}]
    if node:
        spec["nodeName"] = node
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    status = {"phase": phase}
    if phase == "Pending" and not node:
        status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable",
                                 "message": "0/1 nodes are available: 1 Insufficient "
                                            "gpuslice.io/gpu-memory."}]
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec, "status": status}


def k8s_event(kind, name, reason, message, ns="default", host=None, t="2026-11-30T10:00:00Z"):
    e = {"metadata": {"name": name + ".1", "namespace": ns},
         "involvedObject": {"kind": kind, "name": name, "namespace": ns},
         "reason": reason, "message": message, "type": "Warning", "lastTimestamp": t}
    if host:
        e["source"] = {"component": "kubelet", "host": host}
    return e


NVIDIA_RC = {"metadata": {"name": "nvidia"}, "handler": "nvidia"}
GPU_ALLOC = {"gpuslice.io/gpu-memory": 64, "gpuslice.io/gpu-compute": 100,
             "gpuslice.io/realtime": 1}


def run_cluster(fixture, scenario, *args, sockets=("kubelet", "plugin", "podresources"),
                page=0, kubeconfig=True, env=None, node_name="gpu-1", setup=None):
    api = ApiServer(scenario, page=page)
    n = Node(fixture, sockets=sockets)
    if setup:
        setup(n, api)
    a = ["--node", node_name] if node_name else []
    if kubeconfig is True:
        a += ["--kubeconfig", api.kubeconfig()]
    elif kubeconfig:
        a += ["--kubeconfig", kubeconfig(api)]
    p, r = doctor(n, *(a + list(args)), env=env(api) if env else None)
    reqs = api.requests()
    api.close()
    n.close()
    return p, r, reqs


def expect(name, result, fid, sev="error", fix_has=(), title_has=(), evidence_has=(),
           exit_code=None):
    p, r, _ = result
    fs = find(r, fid) if r else []
    ok = bool(fs) and all(f["severity"] == sev for f in fs)
    ok = ok and all(any(s in (f["fix"] or "") for f in fs) for s in fix_has)
    ok = ok and all(any(s in f["title"] for f in fs) for s in title_has)
    ok = ok and all(any(s in " | ".join(f["evidence"]) for f in fs) for s in evidence_has)
    if exit_code is not None:
        ok = ok and p.returncode == exit_code
    tap(ok, name, show(p, r))
    return r


def test_cluster():
    healthy = {"nodes": [k8s_node("gpu-1", GPU_ALLOC)],
               "pods": [k8s_pod("infer", {"gpuslice.io/gpu-memory": 8}, node="gpu-1",
                                runtime_class="nvidia"),
                        k8s_pod("web", {}, node="gpu-1")],
               "runtimeclasses": [NVIDIA_RC], "events": []}
    res = run_cluster("k3s-discrete", healthy)
    p, r, reqs = res
    bad = [f for f in (r or {"findings": []})["findings"] if f["severity"] in ("error", "warn")]
    tap(r is not None and p.returncode == 0 and not bad and
        {"cluster.reachable", "cluster.node-resources", "cluster.runtimeclass"} <= set(ids(r, "ok")),
        "healthy K3s node + healthy cluster over TLS reports healthy", show(p, r))
    tap(reqs and all(line.startswith("GET ") for line in reqs) and
        any("/apis/node.k8s.io/v1/runtimeclasses" in line for line in reqs),
        "the doctor only sends GET requests", "\n".join(reqs))
    if r and find(r, "cluster.node-resources"):
        ev = find(r, "cluster.node-resources")[0]["evidence"][0]
        tap("gpuslice.io/gpu-memory=64 (56 free)" in ev, "allocatable and free are shown", ev)

    # trap 1: the device plugin is missing; a Pod is Pending for gpuslice.io/gpu-memory
    trap1 = {"nodes": [k8s_node("gpu-1", {})],
             "pods": [k8s_pod("train", {"gpuslice.io/gpu-memory": 8}, phase="Pending",
                              runtime_class="nvidia")],
             "runtimeclasses": [NVIDIA_RC],
             "events": [k8s_event("Pod", "train", "FailedScheduling",
                                  "0/1 nodes are available: 1 Insufficient gpuslice.io/gpu-memory. "
                                  "preemption: 0/1 nodes are available: 1 No preemption victims "
                                  "found for incoming pod.")]}
    res = run_cluster("k3s-discrete", trap1, sockets=("kubelet", "podresources"))
    expect("trap 1: the Pending Pod is explained: Insufficient gpuslice.io/gpu-memory, no node has "
           "it, start the agent", res, "cluster.pod-pending",
           title_has=("default/train", "Insufficient gpuslice.io/gpu-memory"),
           evidence_has=("FailedScheduling: 0/1 nodes are available",
                         "gpuslice.io/gpu-memory: asks 8; no node advertises it"),
           fix_has=("gpuslice agent",), exit_code=1)
    expect("trap 1: the node's allocatable lacks our resources; fix starts the agent", res,
           "cluster.node-no-resources", fix_has=("kubectl apply -k deploy/overlays/k3s-dgpu",))
    expect("trap 1: and the node says why: no plugin socket", res, "kubelet.plugin-socket-missing")

    full = {"nodes": [k8s_node("gpu-1", {"gpuslice.io/gpu-memory": 16})],
            "pods": [k8s_pod("a", {"gpuslice.io/gpu-memory": 12}, node="gpu-1",
                             runtime_class="nvidia"),
                     k8s_pod("done", {"gpuslice.io/gpu-memory": 16}, node="gpu-1",
                             phase="Succeeded", runtime_class="nvidia"),
                     k8s_pod("b", {"gpuslice.io/gpu-memory": 8}, phase="Pending",
                             runtime_class="nvidia")],
            "runtimeclasses": [NVIDIA_RC], "events": []}
    expect("a Pending Pod on a full GPU: says how much is free where", run_cluster("k3s-discrete", full),
           "cluster.pod-pending", fix_has=("at most 4 gpuslice.io/gpu-memory is free (on gpu-1)",),
           evidence_has=("gpu-1: 4 free of 16",))
    big = dict(full, pods=[k8s_pod("huge", {"gpuslice.io/gpu-memory": 100}, phase="Pending",
                                   init_req={"gpuslice.io/gpu-memory": 2})])
    expect("a Pending Pod asking more than any node has: lower the request",
           run_cluster("k3s-discrete", big), "cluster.pod-pending",
           fix_has=("more than any node has (largest: 16 on gpu-1)",))

    # trap 3: the RuntimeClass is missing, and a Pod left runtimeClassName out to get going
    trap3 = {"nodes": [k8s_node("gpu-1", GPU_ALLOC)],
             "pods": [k8s_pod("infer", {"gpuslice.io/gpu-memory": 8}, node="gpu-1")],
             "runtimeclasses": [],
             "events": [k8s_event("ReplicaSet", "infer-7d9f", "FailedCreate",
                                  'Error creating: pods "infer-7d9f-x2" is forbidden: pod rejected: '
                                  'RuntimeClass "nvidia" not found')]}
    for fixture, label in (("jetson-orin", "Jetson, K3s"), ("containerd-discrete", "discrete, "
                                                                                   "containerd")):
        res = run_cluster(fixture, trap3)
        expect("trap 3 (%s): RuntimeClass nvidia missing, fix creates it" % label, res,
               "cluster.runtimeclass-missing", fix_has=("kind: RuntimeClass", "handler: nvidia"),
               evidence_has=('RuntimeClass "nvidia" not found',), exit_code=1)
        expect("trap 3 (%s): the Pod without runtimeClassName never gets the device" % label, res,
               "cluster.pod-no-runtimeclass", fix_has=("runtimeClassName: nvidia",),
               title_has=("default/infer",))

    no_rc_needed = dict(healthy, runtimeclasses=[],
                        pods=[k8s_pod("infer", {"gpuslice.io/gpu-memory": 8}, node="gpu-1")])
    res = run_cluster("k3s-discrete", no_rc_needed)
    p, r, _ = res
    tap(r is not None and p.returncode == 0 and "cluster.runtimeclass-missing" in ids(r, "info") and
        "cluster.pod-no-runtimeclass" not in ids(r),
        "with CDI serving the GPU, a missing RuntimeClass is only info", show(p, r))

    sandbox = dict(healthy, events=[k8s_event(
        "Pod", "infer", "FailedCreatePodSandBox",
        'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox '
        'runtime: no runtime for "nvidia" is configured', host="gpu-1")])
    expect("a sandbox failing with 'no runtime for nvidia' is an error",
           run_cluster("trap-k3s-runtime", sandbox), "cluster.sandbox-no-handler",
           evidence_has=('no runtime for "nvidia" is configured',))

    other_handler = dict(healthy, runtimeclasses=[{"metadata": {"name": "nvidia"},
                                                   "handler": "nvidia-cdi"}])
    expect("a RuntimeClass whose handler the node lacks is an error",
           run_cluster("k3s-discrete", other_handler), "cluster.runtimeclass-handler-missing",
           fix_has=("handler: nvidia",))

    plugin = k8s_pod("nvidia-device-plugin-daemonset-x7k2p", {}, node="gpu-1", ns="kube-system")
    plugin["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
    elsewhere = k8s_pod("nvidia-device-plugin-daemonset-q9", {}, node="gpu-2", ns="kube-system")
    elsewhere["spec"]["containers"][0]["image"] = plugin["spec"]["containers"][0]["image"]
    beside = dict(healthy, pods=healthy["pods"] + [plugin, elsewhere])
    expect("NVIDIA's device plugin Pod on this node is a warning (in replica mode too: same socket)",
           run_cluster("k3s-discrete", beside), "cluster.nvidia-plugin-pod", sev="warn", exit_code=0,
           fix_has=("deploy/overlays/replica", "nvidia.com/gpu.deploy.device-plugin=false"),
           evidence_has=("kube-system/nvidia-device-plugin-daemonset-x7k2p", "k8s-device-plugin:v0.17.0"))
    p, r, _ = run_cluster("k3s-discrete", dict(healthy, pods=healthy["pods"] + [elsewhere]))
    tap(r is not None and "cluster.nvidia-plugin-pod" not in ids(r),
        "NVIDIA's plugin on another node is none of this node's business", show(p, r))

    expect("without --node, $NODE_NAME (the DaemonSet's downward API) names the node",
           run_cluster("k3s-discrete", healthy, node_name=None, env=lambda api: {"NODE_NAME": "gpu-1"}),
           "cluster.node-resources", sev="ok", title_has=("gpu-1",))

    expect("an unknown --node is a warning naming the nodes there are",
           run_cluster("k3s-discrete", healthy, node_name="nope"), "cluster.node-missing",
           sev="warn", evidence_has=("gpu-1",), exit_code=0)

    many = dict(healthy, pods=[k8s_pod("p%d" % i, {"gpuslice.io/gpu-memory": 1}, node="gpu-1",
                                       runtime_class="nvidia") for i in range(7)])
    res = run_cluster("k3s-discrete", many, page=2)
    expect("lists follow continue tokens (pages of 2)", res, "cluster.reachable", sev="ok",
           title_has=("7 pods",))
    tap(any("continue=6" in line for line in res[2]), "the last page was asked for",
        "\n".join(res[2]))

    def incluster_setup(n, api):
        n.write("/var/run/secrets/kubernetes.io/serviceaccount/token", api.TOKEN + "\n")
        shutil.copy(certs()["crt"], n.path("/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"))

    expect("in-cluster credentials (service account under --root, KUBERNETES_SERVICE_HOST)",
           run_cluster("k3s-discrete", healthy, kubeconfig=False, setup=incluster_setup,
                       env=lambda api: {"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                                        "KUBERNETES_SERVICE_PORT": str(api.port)}),
           "cluster.reachable", sev="ok", evidence_has=("in-cluster service account",),
           exit_code=0)
    expect("$KUBECONFIG is used when --kubeconfig is not given",
           run_cluster("k3s-discrete", healthy, kubeconfig=False,
                       env=lambda api: {"KUBECONFIG": api.kubeconfig() + ":/nonexistent"}),
           "cluster.reachable", sev="ok", exit_code=0)
    expect("a server certificate not signed by the kubeconfig's CA is refused (TLS verified)",
           run_cluster("k3s-discrete", healthy,
                       kubeconfig=lambda api: api.kubeconfig(ca=certs()["other"])),
           "cluster.unreachable", sev="warn", evidence_has=("certificate",), exit_code=0)
    expect("a rejected token is reported as such",
           run_cluster("k3s-discrete", healthy, kubeconfig=lambda api: api.kubeconfig(token="bad")),
           "cluster.forbidden", sev="warn", evidence_has=("HTTP 401",), fix_has=("kubeconfig",))
    expect("RBAC refusing events is reported, the rest still runs",
           run_cluster("k3s-discrete", dict(healthy, forbid=["/api/v1/events"])),
           "cluster.forbidden", sev="warn", fix_has=("ClusterRole",), exit_code=0)
    expect("an exec-plugin kubeconfig is refused with the reason",
           run_cluster("k3s-discrete", healthy, kubeconfig=lambda api: api.kubeconfig(
               extra_user="    exec:\n      command: aws\n")),
           "cluster.kubeconfig-invalid", sev="warn", evidence_has=("exec",))
    p, r = doctor(Node("k3s-discrete"), "--node", "gpu-1")
    tap(r is not None and "cluster.skipped" in ids(r, "info") and
        "no --kubeconfig" in " ".join(find(r, "cluster.skipped")[0]["evidence"]),
        "without credentials the cluster checks are skipped, saying why", show(p, r))


# ---------------------------------------------------------------- tenants


def test_tenants():
    n = Node("k3s-discrete")
    n.slice("used-1", 4 << 30, age_s=7200, cuda_used=True, pid=os.getpid())
    n.slice("idle-2", 2 << 30, age_s=3600, cuda_used=False)
    n.slice("young-3", 2 << 30, age_s=10, cuda_used=False)
    p, r = doctor(n, "--skip-cluster")
    fs = find(r, "tenant.no-cuda") if r else []
    tap(len(fs) == 1 and "idle-2" in fs[0]["title"] and fs[0]["severity"] == "warn" and
        "first_ctx_ns = 0" in " ".join(fs[0]["evidence"]) and "LD_PRELOAD" in fs[0]["fix"],
        "a slice held an hour without CUDA is the silent CPU fallback (young ones are let be)",
        show(p, r))
    ok = find(r, "tenant.slices") if r else []
    tap(ok and "3 slice(s) on this node, 1 used CUDA" in ok[0]["title"],
        "the slices are counted", show(p, r))
    p, r = doctor(n, "--skip-cluster", "--grace", "7", "--state-dir",
                  n.path("/var/lib/gpuslice/slices"))
    tap(r is not None and len(find(r, "tenant.no-cuda")) == 2, "--grace and --state-dir apply",
        show(p, r))
    with open(n.path("/var/lib/gpuslice/slices/idle-2/ledger"), "r+b") as f:
        f.write(b"NOTALEDG")
    expect_finding("a corrupt ledger is reported", n, "tenant.ledger-unreadable", sev="warn",
                   args=("--skip-cluster",), exit_code=0)
    n.close()

    n = Node("jetson-orin")
    n.slice("a", 4 << 30, age_s=60, cuda_used=True, pid=os.getpid())
    n.slice("b", 4 << 30, age_s=60, cuda_used=True, pid=os.getpid())
    expect_finding("Jetson: slices adding up to more than the board's RAM", n,
                   "tenant.unified-overcommit", args=("--skip-cluster",))
    n.close()

    # Slices set to run as MPS clients need the node's MPS daemon.
    n = Node("k3s-discrete")
    n.slice("mps-1", 2 << 30, age_s=60, cuda_used=True, pid=os.getpid(), sharing="mps")
    expect_finding("MPS slices without an MPS daemon", n, "tenant.mps-no-daemon",
                   fix_has=("nvidia-cuda-mps-control -d", "compute_sharing = timeslice"),
                   args=("--skip-cluster",))
    os.makedirs(n.path("/tmp/nvidia-mps"))
    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ctl.bind(n.path("/tmp/nvidia-mps/control"))
    ctl.listen(1)
    n.socks.append(ctl)
    expect_finding("MPS slices with the daemon's control socket present", n, "tenant.mps", sev="ok",
                   args=("--skip-cluster",))
    other = n.path("/srv/mps")
    os.makedirs(other)
    expect_finding("--mps-pipe-dir points the check elsewhere", n, "tenant.mps-no-daemon",
                   args=("--skip-cluster", "--mps-pipe-dir", other))
    n.socks.remove(ctl)
    ctl.close()  # the socket file stays, as a killed daemon leaves it
    r = expect_finding("MPS slices and a dead daemon's socket file: no daemon", n, "tenant.mps-no-daemon",
                       args=("--skip-cluster",))
    tap(r is not None and "nobody listens" in " ".join(find(r, "tenant.mps-no-daemon")[0]["evidence"]),
        "... and the evidence says nobody listens on it", json.dumps(r)[-3000:] if r else "no report")
    n.close()
    n = Node("jetson-orin")
    n.slice("mps-j", 1 << 30, age_s=60, cuda_used=True, pid=os.getpid(), sharing="mps")
    expect_finding("MPS slices on Jetson", n, "tenant.mps-unsupported",
                   fix_has=("compute_sharing = timeslice",), args=("--skip-cluster",))
    n.close()

    labels = {"gpuslice.io/gpu-memory-unit": "64Mi"}
    scenario = {"nodes": [k8s_node("orin", {"gpuslice.io/gpu-memory": 96}, labels=labels,
                                   memory="7620424Ki")],
                "pods": [k8s_pod("skimpy", {"gpuslice.io/gpu-memory": 32}, node="orin",
                                 runtime_class="nvidia", memory="256Mi"),
                         k8s_pod("careful", {"gpuslice.io/gpu-memory": 32}, node="orin",
                                 runtime_class="nvidia", memory="2560Mi")],
                "runtimeclasses": [NVIDIA_RC], "events": []}
    res = run_cluster("jetson-orin", scenario, node_name="orin")
    r = expect("Jetson: a Pod whose memory request ignores its 2 GiB GPU slice", res,
               "tenant.unified-pod-memory", sev="warn", title_has=("default/skimpy",),
               fix_has=("at least 2048Mi",), exit_code=0)
    tap(r is not None and len(find(r, "tenant.unified-pod-memory")) == 1,
        "Jetson: a Pod that counts its slice in its memory request is fine", show(res[0], r))
    big = dict(scenario, nodes=[k8s_node("orin", {"gpuslice.io/gpu-memory": 200}, labels=labels)])
    expect("Jetson: the agent advertising more GPU memory than the board's RAM",
           run_cluster("jetson-orin", big, node_name="orin"), "tenant.unified-pool-too-big",
           evidence_has=("200 x 64Mi",))
    nolabel = dict(scenario, nodes=[k8s_node("orin", {"gpuslice.io/gpu-memory": 96})])
    expect("Jetson: without the unit label the comparison is skipped, saying so",
           run_cluster("jetson-orin", nolabel, node_name="orin"), "tenant.unified-unit-unknown",
           sev="info", exit_code=0)


def test_docs_cover_ids():
    """Every finding id the code can emit is explained in docs/troubleshooting.md."""
    import glob
    import re
    found = set()
    for path in glob.glob(os.path.join(SRC, "src", "doctor", "*.c")):
        with open(path) as f:
            found |= set(re.findall(r'"((?:node|runtime|kubelet|cluster|tenant)\.[a-z0-9-]+)"',
                                    f.read()))
    with open(os.path.join(SRC, "docs", "troubleshooting.md")) as f:
        doc = f.read()
    missing = sorted(i for i in found if i not in doc)
    tap(found and not missing, "docs/troubleshooting.md explains every finding id (%d)" % len(found),
        missing)


def main():
    if not os.access(GPUSLICE, os.X_OK):
        print("1..0 # SKIP %s not built" % GPUSLICE)
        return 77
    test_healthy_nodes()
    test_trap_missing_plugin_node()
    test_trap_runtime()
    test_node_traps()
    test_cli()
    test_cluster()
    test_tenants()
    test_docs_cover_ids()
    print("1..%d" % _n)
    return 1 if _failed else 0


if __name__ == "__main__":
    sys.exit(main())
