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
        for line in str(diag).splitlines()[:60]:
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
                 "plugin": os.path.join(dp, "gpuslice.sock"),
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

    def slice(self, sid, memory, age_s, cuda_used, pid=0):
        """A slice state dir: limits (key = value) and a ledger (the ABI of src/common/ledger.h)."""
        d = self.path("/var/lib/gpuslice/slices/" + sid)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "limits"), "w") as f:
            f.write("version = 1\nmemory = %d\ncompute = 30\ncompute_mode = share\n"
                    "priority = best-effort\ncontext_reserve = 0\nsimulated = false\n"
                    "device = 0\nslice_id = %s\n" % (memory, sid))
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


def main():
    if not os.access(GPUSLICE, os.X_OK):
        print("1..0 # SKIP %s not built" % GPUSLICE)
        return 77
    test_healthy_nodes()
    test_trap_missing_plugin_node()
    test_trap_runtime()
    test_node_traps()
    test_cli()
    print("1..%d" % _n)
    return 1 if _failed else 0


if __name__ == "__main__":
    sys.exit(main())
