#!/usr/bin/python3
"""One node end to end, with a real container engine: the image built from
deploy/Containerfile, the DaemonSet's containers (the interposer's installer,
the agent, the monitor) started as `kubectl apply -k deploy/overlays/k3s-dgpu`
starts them (their image, command, environment, host paths, security context
and probes, read from the overlay as Debian's kubectl renders it), tenant
containers made from each Allocate answer on a stock Debian image, the
doctor in the agent's container as deploy/README.md runs it. Only the kubelet is ours
(tests/agent/fakekubelet.py); the GPU is the simulated one, which a CDI spec
hands to the tenants as NVIDIA's container runtime hands the real driver.

docs/e2e.md maps each step to a real K3s node. Needs podman, runc and
mmdebstrap (scripts/install-deps.sh installs them) and root; TAP output, exit
77 when the engine is missing. GS_E2E_KEEP=1 keeps the node root."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "agent"))
sys.path.insert(0, os.path.join(TESTS, "deploy"))
sys.path.insert(0, TESTS)
import fakekubelet as fk  # noqa: E402
import kustomize as kz  # noqa: E402
from tap import Tap  # noqa: E402

SRC = fk.SRC
BUILD = fk.BUILD
OVERLAY = "overlays/k3s-dgpu"  # deploy/README.md's install on a dGPU node
BASE = "docker.io/library/debian:12"  # what `FROM debian:12` resolves to, made here
CDI_DIR = "/var/run/cdi"  # one of podman's CDI spec directories
SIM_GPU = "SIM-GPU-0000"
NODE_NAME = "e2e-node"  # the downward API's spec.nodeName
tap = Tap()
MiB, GiB = 1 << 20, 1 << 30


def sh(cmd, check=True, timeout=900, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:],
                                                        p.stderr[-3000:]))
    return p


class Engine:
    """podman as this machine can run it (runc, cgroupfs; see docs/e2e.md)."""

    def __init__(self, tmp):
        self.conf = os.path.join(tmp, "containers.conf")
        with open(self.conf, "w") as f:
            f.write('[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\n'
                    'runtime = "runc"\n')
        self.env = dict(os.environ, CONTAINERS_CONF=self.conf)

    def __call__(self, *args, check=True, timeout=900):
        return sh(["podman"] + list(args), check=check, timeout=timeout, env=self.env)

    def base_image(self, tmp):
        if self("image", "exists", BASE, check=False).returncode == 0:
            return "present"
        tar = os.path.join(tmp, "rootfs.tar")
        sh(["mmdebstrap", "--variant=minbase", "bookworm", tar], timeout=900)
        self("import", tar, BASE)
        os.unlink(tar)
        return "made with mmdebstrap"

    def build(self, tag):
        t = time.monotonic()
        self("build", "-f", os.path.join(SRC, "deploy", "Containerfile"), "-t", tag, SRC, timeout=1800)
        return time.monotonic() - t


class Manifest:
    """deploy/<overlay> as `kubectl apply -k` renders it, the way the kubelet would run its DaemonSet."""

    def __init__(self, overlay=OVERLAY):
        docs = kz.render(overlay)
        self.ds = kz.find(docs, "DaemonSet", "gpuslice-agent")
        self.cm = kz.find(docs, "ConfigMap", "gpuslice-agent-config")
        self.pod = self.ds["spec"]["template"]["spec"]
        self.image = self.pod["containers"][0]["image"]

    def container(self, name):
        return next(c for c in self.pod["initContainers"] + self.pod["containers"] if c["name"] == name)

    def security_args(self, container):
        """The Pod's and the container's security context as podman flags; ValueError on one it cannot give."""
        sc = container.get("securityContext", {})
        args = ["--user", str(sc.get("runAsUser", 0))]
        caps = sc.get("capabilities", {})
        args += ["--cap-drop=%s" % c.lower() for c in caps.get("drop", [])]
        args += ["--cap-add=%s" % c.lower() for c in caps.get("add", [])]
        if sc.get("readOnlyRootFilesystem"):
            args += ["--read-only", "--read-only-tmpfs=false"]  # the kubelet adds no tmpfs
        if sc.get("allowPrivilegeEscalation") is False:
            args += ["--security-opt", "no-new-privileges"]
        if sc.get("privileged"):
            raise ValueError("the e2e does not run privileged containers")
        seccomp = self.pod.get("securityContext", {}).get("seccompProfile", {}).get("type", "RuntimeDefault")
        if seccomp != "RuntimeDefault":  # podman's default profile is the runtime's default
            raise ValueError("seccomp profile %s" % seccomp)
        if self.pod.get("hostPID"):
            args += ["--pid", "host"]
        return args

    def run_args(self, container, root, volumes_dir, config_text, flags=None):
        """podman run arguments for one of the pod's containers on node root `root`, and its
        command with `flags` (--key=value) replaced or added, as an overlay of one's own would."""
        args = self.security_args(container)
        vols = {v["name"]: v for v in self.pod["volumes"]}
        for m in container.get("volumeMounts", []):
            v = vols[m["name"]]
            if "hostPath" in v:
                host = root + v["hostPath"]["path"] if v["hostPath"]["path"] != "/" else root
                os.makedirs(host, exist_ok=True)
            else:  # the ConfigMap: its data as files
                host = os.path.join(volumes_dir, m["name"])
                os.makedirs(host, exist_ok=True)
                for k, text in self.cm["data"].items():
                    with open(os.path.join(host, k), "w") as f:
                        f.write(config_text if k == "agent.conf" else text)
            args += ["-v", "%s:%s%s" % (host, m["mountPath"], ":ro" if m.get("readOnly") else "")]
        for e in container.get("env", []):
            if "value" in e:
                args += ["-e", "%s=%s" % (e["name"], e["value"])]
            elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
                args += ["-e", "%s=%s" % (e["name"], NODE_NAME)]
            else:
                raise ValueError("env %s: the e2e cannot give %s" % (e["name"], e))
        cmd = container["command"] + container.get("args", [])
        for k, v in (flags or {}).items():
            cmd = [a for a in cmd if not a.startswith("--%s=" % k)] + ["--%s=%s" % (k, v)]
        return args, cmd

    def probe(self, container, kind):
        """The container's probe (readinessProbe, livenessProbe): ("exec", argv) or ("http", path, port)."""
        p = self.container(container)[kind]
        if "exec" in p:
            return ("exec", p["exec"]["command"])
        ports = {q["name"]: q["containerPort"] for q in self.container(container).get("ports", [])}
        port = p["httpGet"]["port"]
        return ("http", p["httpGet"]["path"], ports.get(port, port))


def agent_config(cm, **changes):
    """The ConfigMap's agent.conf with settings changed, as an operator would edit it."""
    lines = []
    for line in cm["data"]["agent.conf"].splitlines():
        key = line.split("=", 1)[0].strip()
        if key in changes:
            continue
        lines.append(line)
    lines += ["%s = %s" % kv for kv in changes.items()]
    return "\n".join(lines) + "\n"


class Node:
    def __init__(self, engine, tmp, overlay=OVERLAY):
        self.e = engine
        self.tmp = tmp
        self.root = os.path.join(tmp, "node")
        shutil.copytree(os.path.join(TESTS, "doctor", "fixtures", "k3s-discrete"), self.root, symlinks=True)
        self.kdir = self.path("/var/lib/kubelet/device-plugins")
        self.podres_sock = self.path("/var/lib/kubelet/pod-resources/kubelet.sock")
        # /usr/local/lib is on every host (the fixture has none): the DaemonSet's
        # hostPath for libgpuslice.so is made inside it.
        for d in (self.kdir, os.path.dirname(self.podres_sock), self.path("/usr/local/lib")):
            os.makedirs(d, exist_ok=True)
        self.state = self.path("/var/lib/gpuslice/slices")
        self.m = Manifest(overlay)
        self.containers = []
        self.cdi = os.path.join(CDI_DIR, "gpuslice-e2e-%d.yaml" % os.getpid())

    def path(self, p):
        return self.root + p

    def install_driver(self):
        """The simulated GPU's driver, where a node keeps NVIDIA's, and a CDI spec that
        hands it to containers given nvidia.com/gpu=<uuid> (as `nvidia-ctk cdi generate`)."""
        drv = self.path("/usr/lib/gpuslice-sim")
        os.makedirs(drv, exist_ok=True)
        self.e("run", "--rm", "-v", drv + ":/out", "--entrypoint", "sh", self.m.image, "-c",
               "cp /usr/local/lib/gpuslice/sim/libcuda.so.1 /out/")
        os.makedirs(CDI_DIR, exist_ok=True)
        spec = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
                "devices": [{"name": SIM_GPU, "containerEdits": {"env": ["GS_E2E_GPU=" + SIM_GPU]}}],
                "containerEdits": {"mounts": [{
                    "hostPath": os.path.join(drv, "libcuda.so.1"),
                    "containerPath": "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                    "options": ["ro", "bind"]}]}}
        with open(self.cdi, "w") as f:
            yaml.safe_dump(spec, f)

    def start_pod(self, name, config_text, flags):
        """The DaemonSet's pod: its init container, then the agent, as the kubelet runs them."""
        vols = os.path.join(self.tmp, "volumes-" + name)
        for c in self.m.pod.get("initContainers", []):
            args, cmd = self.m.run_args(c, self.root, vols, config_text)
            self.e("run", "--rm", "--network", "none", *args, "--entrypoint", cmd[0], c["image"], *cmd[1:])
        c = self.m.container("agent")
        args, cmd = self.m.run_args(c, self.root, vols, config_text, flags)
        self.e("run", "-d", "--name", name, "--network", "none", *args, "--entrypoint", cmd[0],
               c["image"], *cmd[1:])
        self.containers.append(name)

    def start_monitor(self, name, port):
        """The Pod's monitor container. A Pod has its own network namespace; here the host's,
        so the test reaches it: `port` replaces the manifest's when that one is taken here."""
        c = self.m.container("monitor")
        args, cmd = self.m.run_args(c, self.root, os.path.join(self.tmp, "volumes-" + name), "")
        cmd = [":%d" % port if a.startswith(":") and a[1:].isdigit() else a for a in cmd]
        self.e("run", "-d", "--name", name, "--network", "host", *args, "--entrypoint", cmd[0],
               c["image"], *cmd[1:])
        self.containers.append(name)

    def exec_probe(self, name, container):
        """The kubelet's readiness check of an exec probe, in the running container: its exit status."""
        kind, argv = self.m.probe(container, "readinessProbe")
        return self.e("exec", name, *argv, check=False).returncode

    def run_probe(self, container, config_text):
        """The container's readiness probe in a fresh container with its mounts (it is not running)."""
        c = self.m.container(container)
        args, _ = self.m.run_args(c, self.root, os.path.join(self.tmp, "volumes-probe"), config_text)
        kind, argv = self.m.probe(container, "readinessProbe")
        return self.e("run", "--rm", "--network", "none", *args, "--entrypoint", argv[0], c["image"], *argv[1:],
                      check=False).returncode

    def files(self):
        """Every path under the node root, for what-stays-on-the-host."""
        out = set()
        for d, dirs, names in os.walk(self.root):
            for n in dirs + names:
                out.add(os.path.relpath(os.path.join(d, n), self.root))
        return out

    def stop(self, name, sig="TERM"):
        self.e("kill", "--signal", sig, name, check=False)
        self.e("wait", name, check=False, timeout=60)

    def logs(self, name):
        p = self.e("logs", name, check=False)
        return p.stdout + p.stderr

    def tenant(self, name, resp, cmd, mounts=True, skip=("/run/gpuslice/limits", "/run/gpuslice/ledger")):
        """A container made from one ContainerAllocateResponse, as the kubelet and the
        runtime would: its env, its mounts, its device specs and CDI devices. With
        mounts=False the slice's own files (skip) are left out."""
        c = resp.container_responses[0] if resp is not None else None
        args = []
        if c is not None:
            for k, v in c.envs.items():
                args += ["-e", "%s=%s" % (k, v)]
            for m in c.mounts:
                # The node root stands for the host's /: host paths live under it.
                if mounts or m.container_path not in skip:
                    args += ["-v", "%s:%s%s" % (self.root + m.host_path, m.container_path,
                                                ":ro" if m.read_only else "")]
            for d in c.devices:
                args += ["--device", "%s:%s:%s" % (self.root + d.host_path, d.container_path,
                                                   d.permissions)]
            cdi = [d.name for d in c.cdi_devices] + [v for k, v in c.annotations.items()
                                                     if k.startswith("cdi.k8s.io/")]
            vis = c.envs.get("NVIDIA_VISIBLE_DEVICES", "void")
            if not cdi and vis not in ("void", "none", ""):
                # NVIDIA's runtime in CDI mode turns the env into CDI devices.
                cdi = ["nvidia.com/gpu=%s" % d for d in vis.split(",")]
            for d in cdi:
                args += ["--device", d]
        demo = os.path.join(BUILD, "gpuslice-demo")
        p = self.e("run", "--name", name, "--network", "none", "-v", demo + ":/opt/demo:ro", *args,
                   BASE, *cmd, check=False, timeout=300)
        self.containers.append(name)
        return p

    def close(self):
        for c in self.containers:
            self.e("rm", "-f", c, check=False)
        if os.path.exists(self.cdi):
            os.unlink(self.cdi)


def prometheus_queries(port, metrics):
    """Debian's Prometheus scrapes the monitor's container (every second) and
    answers the queries deploy/'s Grafana dashboard and PrometheusRules ask
    (tests/monitor/promql.py: each names only metrics the monitor exports, and
    each has series)."""
    if not shutil.which("prometheus"):
        tap.ok(True, "Prometheus's queries: prometheus not installed # skip")
        return
    sys.path.insert(0, os.path.join(TESTS, "monitor"))
    import promql
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/api/slices" % port, timeout=5) as r:
            node_name = json.load(r)["node"]
    except (OSError, ValueError, KeyError):
        node_name = "unknown"
    # The node label as the ServiceMonitor's relabeling adds it.
    prom = promql.Prometheus("127.0.0.1:%d" % port, labels={"node": node_name})
    try:
        tap.ok(prom.wait_scraped(samples=4), "Debian's Prometheus scrapes the monitor's container", prom.logs())
        results = promql.check(prom, metrics)
        tap.ok(results and all(good for good, name, _ in results if "names only" in name),
               "every expression of deploy/'s Grafana dashboard and alert rules names only metrics the "
               "monitor exports (%d expressions)" % (len(results) // 2),
               [(n, d) for good, n, d in results if not good and "names only" in n])
        tap.ok(results and all(good for good, name, _ in results if "names only" not in name),
               "Prometheus answers each of them with series",
               [(n, d) for good, n, d in results if not good and "names only" not in n])
    finally:
        prom.stop()


def allocate(plugin, ids):
    return plugin.allocate(ids)


def test_node(e, tmp, pb):
    node = Node(e, tmp)
    node.install_driver()
    kub = fk.Kubelet(pb[0], node.kdir)
    kub.start()
    podres = fk.PodResources(pb[1], node.podres_sock)
    podres.start()
    try:
        before = node.files()
        # The overlay's agent.conf and flags, but the simulated GPU (the overlay says nvml).
        cfg = agent_config(node.m.cm, log_level="debug")
        flags = {"backend": "simulated"}
        node.start_pod("gs-agent", cfg, flags)
        regs = kub.wait_registrations(3, timeout=30)
        names = sorted(r[1].resource_name for r in regs)
        tap.ok(names == ["gpuslice.io/gpu-compute", "gpuslice.io/gpu-memory", "gpuslice.io/realtime"],
               "the agent in its image registers its three resources with the kubelet", (names, node.logs("gs-agent")))
        ep = {r[1].resource_name: os.path.join(node.kdir, r[1].endpoint) for r in regs}
        lib = node.path("/usr/local/lib/gpuslice/libgpuslice.so")
        tap.ok(os.path.exists(lib) and os.path.getsize(lib) > 0,
               "the init container installed libgpuslice.so on the host path Allocate mounts", lib)
        tap.ok(node.exec_probe("gs-agent", "agent") == 0,
               "the agent, under the overlay's security context (no capability, read-only root), is ready "
               "by its own readiness probe (its sockets)", node.m.probe("agent", "readinessProbe"))
        mem = fk.Plugin(pb[0], ep["gpuslice.io/gpu-memory"])
        cpt = fk.Plugin(pb[0], ep["gpuslice.io/gpu-compute"])
        rt = fk.Plugin(pb[0], ep["gpuslice.io/realtime"])

        ids_a = ["gpu0-mem-%04d" % i for i in range(4)]        # 1 GiB
        ids_b = ["gpu0-mem-%04d" % i for i in range(4, 12)]    # 2 GiB
        ids_c = ["gpu0-mem-%04d" % i for i in range(12, 14)]   # 512 MiB, never uses CUDA
        ra = allocate(mem, ids_a)
        cpt.allocate(["gpu0-pct-%03d" % i for i in range(30)])
        time.sleep(0.05)
        rb = allocate(mem, ids_b)
        rt.allocate(["gpu0-rt-0"])
        time.sleep(0.05)
        rc = allocate(mem, ids_c)
        sid = {k: dict(r.container_responses[0].envs)["GPUSLICE_SLICE_ID"] for k, r in
               (("a", ra), ("b", rb), ("c", rc))}
        tap.ok(len(set(sid.values())) == 3, "three containers, three slices", sid)

        # Tenants on a stock Debian image: the demo loads weights, then fills activations.
        pa = node.tenant("tenant-a", ra, ["/opt/demo", "512"])
        pb_ = node.tenant("tenant-b", rb, ["/opt/demo", "1024", "2"])
        out_a, out_b = pa.stdout + pa.stderr, pb_.stdout + pb_.stderr
        tap.ok(pa.returncode == 0 and "CUDA_ERROR_OUT_OF_MEMORY" in out_a and "1.00 GiB total" in out_a,
               "tenant A sees its 1 GiB slice and gets a clean out-of-memory at the cap", out_a[-1500:])
        tap.ok(pb_.returncode == 0 and "OUT_OF_MEMORY" not in out_b and "2.00 GiB total" in out_b and
               "holds 2 x 256 MiB" in out_b,
               "tenant B, beside it, sees its 2 GiB and is untouched", out_b[-1500:])
        pc = node.tenant("tenant-c", rc, ["sh", "-c", "grep -q libgpuslice /proc/self/maps && echo loaded"])
        tap.ok(pc.returncode == 0 and pc.stdout.strip() == "loaded",
               "tenant C has the interposer loaded (ld.so.preload) but never touches CUDA",
               pc.stdout + pc.stderr)
        bare = node.tenant("tenant-bare", ra, ["/opt/demo", "256"], mounts=False)
        out = bare.stdout + bare.stderr
        tap.ok("not mounted at /run/gpuslice/limits" in out and "OUT_OF_MEMORY" in out and
               "loaded 256 MiB" not in out,
               "a container whose runtime dropped the slice's files gets no GPU memory and says why",
               out[-1500:])

        # The kubelet's PodResources: which Pod holds which device IDs.
        pr = pb[1]

        def pod(name, ids):
            return pr.PodResources(name=name, namespace="models", containers=[pr.ContainerResources(
                name="server", devices=[pr.ContainerDevices(resource_name="gpuslice.io/gpu-memory",
                                                           device_ids=ids)])])
        podres.response = pr.ListPodResourcesResponse(pod_resources=[
            pod("model-a", ids_a), pod("model-b", ids_b), pod("cpu-only", ids_c)])

        # The Pod's monitor container, on the node's state and PodResources, on its port.
        kind, path, port = node.m.probe("monitor", "readinessProbe")
        want = port
        if not port_free(port):
            port = 19400 + os.getpid() % 500
        node.start_monitor("gs-monitor", port)
        base = "http://127.0.0.1:%d" % port

        def get(path):
            try:
                with urllib.request.urlopen(base + path, timeout=5) as r:
                    return r.read().decode()
            except OSError:
                return None
        deadline = time.monotonic() + 20
        api = None
        while time.monotonic() < deadline and api is None:
            api = get("/api/slices")
            time.sleep(0.2)
        tap.ok(api is not None and get(path) is not None and want == kz.contract("GS_MONITOR_PORT"),
               "the monitor answers its readiness probe's GET %s on its port, GS_MONITOR_PORT %d%s" %
               (path, want, "" if port == want else " (taken here: %d)" % port), node.logs("gs-monitor"))
        slices = {s["id"]: s for s in json.loads(api)["slices"]} if api else {}
        a, b, c = (slices.get(sid[k], {}) for k in "abc")
        tap.ok(a.get("pod") == "model-a" and b.get("pod") == "model-b" and c.get("pod") == "cpu-only",
               "the monitor names each slice's Pod (PodResources through the agent's alloc files)",
               api or node.logs("gs-monitor"))
        tap.ok(a.get("refused_by_cap") == 1 and a.get("memory_cap_bytes") == GiB and
               b.get("refused_by_cap") == 0 and b.get("peak_process_bytes") == 1536 * MiB,
               "the monitor shows A's refusal at its 1 GiB cap and B's 1.5 GiB peak", (a, b))
        tap.ok(a.get("cuda_seen") and b.get("cuda_seen") and c and not c.get("cuda_seen"),
               "the monitor flags the slice that never touched CUDA (CPU fallback)", c)
        metrics = get("/metrics") or ""
        with open(os.path.join(tmp, "metrics.txt"), "w") as f:
            f.write(metrics)
        if shutil.which("promtool"):
            p = sh(["promtool", "check", "metrics"], check=False, input=metrics)
            tap.ok(p.returncode == 0 and 'pod="model-a"' in metrics,
                   "/metrics passes promtool check metrics and carries the Pod label", p.stdout + p.stderr)
        else:
            tap.ok(True, "/metrics: promtool not installed # skip")
        prometheus_queries(port, metrics)

        # The doctor as deploy/README.md runs it: in the agent's container, the host's /
        # at /host (kubectl -n gpuslice-system exec ... -c agent -- gpuslice doctor --root /host).
        p = e("exec", "gs-agent", "gpuslice", "doctor", "--root", "/host", "--skip-cluster", "--json",
              check=False)
        try:
            r = json.loads(p.stdout)
        except ValueError:
            r = {"findings": [], "raw": p.stdout + p.stderr}

        # The doctor from the same image on the node root (the traps below stop the agent).
        def doctor(*extra):
            p = e("run", "--rm", "--network", "none", "-v", node.root + ":/host:ro", node.m.image, "doctor",
                  "--root", "/host", "--skip-cluster", "--json", *extra, check=False)
            try:
                return json.loads(p.stdout)
            except ValueError:
                return {"findings": [], "raw": p.stdout + p.stderr}

        def errors(r):
            return [f["id"] for f in r.get("findings") or [] if f.get("severity") == "error"]

        def has(r, fid, fix=""):
            return any(f["id"] == fid and fix in (f.get("fix") or "") for f in r.get("findings") or [])
        tap.ok(not errors(r) and has(r, "kubelet.plugin-socket"),
               "doctor in the agent's container on the healthy node: 0 errors", r)
        tap.ok(not has(r, "tenant.limits-unreadable") and
               any(f["id"] == "tenant.slices" and "3 slice(s)" in f["title"] for f in r.get("findings") or []),
               "the doctor counts the agent's three slices (its _agent folder is not one)",
               [(f["id"], f["title"]) for f in r.get("findings") or []])

        # The node's traps, introduced for real, one at a time.
        toml = node.path("/var/lib/rancher/k3s/agent/etc/containerd/config.toml")
        with open(toml) as f:
            orig = f.read()
        tmpl = node.path("/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl")
        # An operator's template without the nvidia runtime; K3s, restarted, writes
        # config.toml from it.
        stripped = "\n".join(line for line in orig.splitlines() if "nvidia" not in line) + "\n"
        for path in (tmpl, toml):
            with open(path, "w") as f:
                f.write(stripped)
        r = doctor()
        tap.ok(has(r, "runtime.nvidia-handler-missing") and "runtime.nvidia-handler-missing" in errors(r),
               "trap: the runtime handler removed from K3s's containerd template is named", errors(r))
        os.unlink(tmpl)
        with open(toml, "w") as f:
            f.write(orig)
        cdi_spec = node.path("/etc/cdi/nvidia.yaml")
        os.rename(cdi_spec, cdi_spec + ".off")
        r = doctor()
        tap.ok(any(f["id"].startswith("runtime.cdi") and f["severity"] in ("error", "warn")
                   for f in r.get("findings", [])),
               "trap: no CDI spec is named", [(f["id"], f["severity"]) for f in r.get("findings", [])])
        os.rename(cdi_spec + ".off", cdi_spec)
        for d in ("nvidia0", "nvidiactl"):
            os.rename(node.path("/dev/" + d), node.path("/dev/" + d + ".off"))
        r = doctor()
        tap.ok(has(r, "node.device-node-missing") or "node.device-node-missing" in errors(r),
               "trap: the driver's device nodes absent are named", errors(r))
        for d in ("nvidia0", "nvidiactl"):
            os.rename(node.path("/dev/" + d + ".off"), node.path("/dev/" + d))

        # The agent restarted mid-run keeps the running tenants' slices.
        node.stop("gs-agent")
        node.e("rm", "-f", "gs-agent", check=False)
        node.containers.remove("gs-agent")
        r = doctor()
        tap.ok(has(r, "kubelet.plugin-socket-missing", "gpuslice agent"),
               "trap: the agent stopped is named, with the fix", errors(r))
        rc_probe = node.run_probe("agent", cfg)
        tap.ok(rc_probe != 0, "and the agent's readiness probe fails: its sockets are gone", rc_probe)
        node.start_pod("gs-agent", cfg, flags)
        kub.wait_registrations(3, timeout=30)
        log = node.logs("gs-agent")
        kept = all(os.path.exists(os.path.join(node.state, sid[k], "limits")) and
                   "slice %s kept from before the restart" % sid[k] in log for k in "abc")
        tap.ok(kept, "after an agent restart the running tenants' slices are kept", log[-2000:])
        # A's container, started again from its Allocate answer, still has its 1 GiB.
        pa2 = node.tenant("tenant-a2", ra, ["/opt/demo", "512"])
        out = pa2.stdout + pa2.stderr
        tap.ok(pa2.returncode == 0 and "1.00 GiB total" in out and "CUDA_ERROR_OUT_OF_MEMORY" in out,
               "and A's limits still hold after the restart", out[-1500:])

        # Uninstall (deploy/README.md): the Pod and its tenants gone, what stays on the host
        # is what the README says, and its commands remove it.
        node.stop("gs-agent")
        node.close()
        left = sorted(node.files() - before)
        cleanup = uninstall_paths()
        tap.ok(left and cleanup and all(any(("/" + f + "/").startswith(p.rstrip("/") + "/") for p in cleanup)
                                        for f in left),
               "uninstalled, only what deploy/README.md says stays on the host is left (%s)" % ", ".join(cleanup),
               [f for f in left if not any(("/" + f + "/").startswith(p.rstrip("/") + "/") for p in cleanup)])
        for p in cleanup:
            shutil.rmtree(node.path(p), ignore_errors=True)
        tap.ok(node.files() == before, "and deploy/README.md's commands remove it", sorted(node.files() ^ before))
    finally:
        kub.stop()
        podres.stop()
        node.close()


def readme():
    with open(os.path.join(SRC, "deploy", "README.md")) as f:
        return f.read()


def uninstall_paths():
    """The host paths deploy/README.md's uninstall removes (its `sudo rm -rf` line)."""
    with open(os.path.join(SRC, "deploy", "README.md")) as f:
        for line in f:
            if line.strip().startswith("sudo rm -rf /"):
                return line.split("#", 1)[0].split()[3:]
    return []


def port_free(port):
    import socket
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
            return True
        except OSError:
            return False


def read_limits(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition("=")
            out[k.strip()] = v.split("#", 1)[0].strip()
    return out


def test_replica(e, tmp, pb):
    """deploy/overlays/replica: NVIDIA's time-slicing config, here at 2 replicas: two
    tenants on nvidia.com/gpu, each held to half of the GPU."""
    tmp = os.path.join(tmp, "replica")
    os.makedirs(tmp)
    node = Node(e, tmp, "overlays/replica")
    node.install_driver()
    kub = fk.Kubelet(pb[0], node.kdir)
    kub.start()
    try:
        # The overlay's ConfigMap (agent.conf and sharing.yaml, mounted together) and its
        # flag naming sharing.yaml; 2 replicas instead of its 4.
        sharing = yaml.safe_load(node.m.cm["data"]["sharing.yaml"])
        sharing["sharing"]["timeSlicing"]["resources"][0]["replicas"] = 2
        node.m.cm["data"]["sharing.yaml"] = yaml.safe_dump(sharing)
        node.start_pod("gs-agent-replica", node.m.cm["data"]["agent.conf"], {"backend": "simulated"})
        regs = {r[1].resource_name: r[1].endpoint for r in kub.wait_registrations(2, timeout=30)}
        tap.ok("nvidia.com/gpu" in regs, "replica mode: the agent in its image registers nvidia.com/gpu",
               (regs, node.logs("gs-agent-replica")[-1500:]))
        gpu = fk.Plugin(pb[0], os.path.join(node.kdir, regs.get("nvidia.com/gpu", "x")))
        outs, caps = [], []
        for k in range(2):
            r = gpu.allocate(["%s::%d" % (SIM_GPU, k)])
            lim = [m.host_path for m in r.container_responses[0].mounts
                   if m.container_path == "/run/gpuslice/limits"]
            caps.append(int(read_limits(node.root + lim[0]).get("memory", 0)) if lim else 0)
            p = node.tenant("replica-%d" % k, r, ["/opt/demo", "512"])
            outs.append(p.stdout + p.stderr)
        half = (16 * GiB - 2 * 608 * MiB) // 2
        tap.ok(caps == [half, half], "two replicas, each half the GPU after the context reserve", caps)
        seen = "%.2f GiB total" % (half / GiB)
        tap.ok(all(seen in o and "CUDA_ERROR_OUT_OF_MEMORY" in o for o in outs),
               "each replica's tenant sees its half and is refused at it", "\n----\n".join(o[-800:] for o in outs))
    finally:
        kub.stop()
        node.close()


def main():
    missing = [t for t in ("podman", "runc", "mmdebstrap") if not shutil.which(t)]
    if not kz.debian_kubectl():
        missing.append("Debian's kubectl (kubernetes-client)")
    if missing or os.geteuid() != 0:
        print("1..0 # SKIP needs root and %s" % (", ".join(missing) or "nothing else"))
        return 77
    tmp = tempfile.mkdtemp(prefix="gs-e2e-")
    e = Engine(tmp)
    try:
        how = e.base_image(tmp)
        tap.ok(True, "base image debian:12: %s" % how)
        # deploy/README.md step 1 builds the image under the name the overlays run.
        image = Manifest().image
        tap.ok(("podman build -f deploy/Containerfile -t %s ." % image) in readme(),
               "deploy/README.md builds the image the overlay runs, %s" % image)
        secs = e.build(image)
        tap.ok(True, "deploy/Containerfile builds (%.0f s)" % secs)
        p = e("run", "--rm", image, "version", check=False)
        tap.ok(p.returncode == 0 and "build: full" in p.stdout, "the image starts: gpuslice version",
               p.stdout + p.stderr)
        pb = fk.load_protos(tmp)
        test_node(e, tmp, pb)
        test_replica(e, tmp, pb)
    except Exception:  # one failure, with its story
        import traceback
        tap.ok(False, "end-to-end run", traceback.format_exc())
    finally:
        if os.environ.get("GS_E2E_KEEP"):
            print("# kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
