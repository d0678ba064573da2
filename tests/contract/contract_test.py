#!/usr/bin/python3
"""The node contract with the real code on both sides: what the agent writes
(its plugin sockets, its state directory, its node file, its NFD labels file)
is fed to the doctor and the monitor, and a tenant runs under the slice the
agent allocated (the real interposer on the simulated GPU). Only the kubelet is
played (tests/agent/fakekubelet.py); the node root is a doctor fixture copied to
a temporary folder. TAP output. Run with /usr/bin/python3 (Debian's grpcio)."""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "agent"))
sys.path.insert(0, os.path.join(TESTS, "doctor"))
import doctor_test as dt  # noqa: E402  (its fixtures, fake API server and runner)
import fakekubelet as fk  # noqa: E402

tap = dt.tap
BUILD = dt.BUILD
GS = dt.GPUSLICE
KDIR = "/var/lib/kubelet/device-plugins"
PODRES = "/var/lib/kubelet/pod-resources/kubelet.sock"
STATE = "/var/lib/gpuslice/slices"
FEATURES = "/etc/kubernetes/node-feature-discovery/features.d"


def wait_for(pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return pred()


def read_kv(path, sep="="):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and sep in line:
                k, v = line.split(sep, 1)
                out[k.strip()] = v.strip()
    return out


class NodeAgent:
    """The agent on a fixture root, registered with the played kubelet."""

    def __init__(self, node, pb, extra=()):
        self.node = node
        self.kdir = node.path(KDIR)
        self.kub = fk.Kubelet(pb[0], self.kdir)
        self.kub.start()
        self.podres = fk.PodResources(pb[1], node.path(PODRES))
        self.podres.start()
        self.state = node.path(STATE)
        self.features = node.path(FEATURES)
        os.makedirs(self.features, exist_ok=True)
        sim = os.path.join(node.tmp, "sim.conf")
        with open(sim, "w") as f:
            f.write("gpus = 1\nmemory = 16Gi\n")
        self.log = open(os.path.join(node.tmp, "agent.log"), "wb")
        self.proc = subprocess.Popen(
            [GS, "agent", "--backend", "simulated", "--sim-config", sim, "--kubelet-dir", self.kdir,
             "--state-root", self.state, "--features-dir", self.features,
             "--interposer-path", os.path.join(BUILD, "libgpuslice.so"),
             "--pod-resources-socket", node.path(PODRES), "--reclaim-interval", "3600"]
            + list(extra), stdout=self.log, stderr=self.log)
        self.regs = {r[1].resource_name: r[1].endpoint for r in self.kub.wait_registrations(3)}

    def plugin(self, resource):
        return fk.Plugin(self.kub.dp, os.path.join(self.kdir, self.regs[resource]))

    def tail(self):
        with open(self.log.name, "rb") as f:
            return f.read().decode(errors="replace")[-3000:]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.kub.stop()
        self.podres.stop()


def findings(report, fid):
    return [f for f in (report or {}).get("findings", []) if f.get("id") == fid]


def test_agent_to_doctor(pb):
    """The doctor, on the node where the agent runs, finds the agent's sockets."""
    node = dt.Node("k3s-discrete", sockets=())
    agent = NodeAgent(node, pb)
    try:
        nodefile = read_kv(os.path.join(agent.state, "_agent", "node"))
        socks = {k[len("socket."):]: v for k, v in nodefile.items() if k.startswith("socket.")}
        tap(socks == agent.regs,
            "the node file names the socket of each resource the agent registered", (socks, agent.regs))
        _, rep = dt.doctor(node, "--skip-cluster")
        ok = findings(rep, "kubelet.plugin-socket")
        tap(len(ok) == 3 and all(f["severity"] == "ok" for f in ok) and
            not findings(rep, "kubelet.plugin-socket-missing") and
            not findings(rep, "kubelet.plugin-socket-stale"),
            "doctor on the agent's node: every plugin socket present and listening, none missing",
            json.dumps(rep, indent=1)[-3000:] if rep else agent.tail())
        tap(not findings(rep, "kubelet.nvidia-plugin-present"),
            "fractional mode: no NVIDIA plugin reported", rep and [f["id"] for f in rep["findings"]])
        tap(not findings(rep, "tenant.limits-unreadable"),
            "the agent's own folder in the state root is not taken for a slice",
            rep and [(f["id"], f["title"]) for f in rep["findings"]])
    finally:
        agent.stop()
    # The agent gone (SIGTERM removes its sockets): the doctor names each one.
    _, rep = dt.doctor(node, "--skip-cluster")
    miss = findings(rep, "kubelet.plugin-socket-missing")
    tap(len(miss) == 3 and all(f["severity"] == "error" for f in miss) and
        all("gpuslice agent" in f.get("fix", "") for f in miss),
        "agent stopped: the doctor reports each of its three sockets missing, fix names the agent",
        rep and [(f["id"], f["severity"]) for f in rep["findings"]])
    node.close()


def test_replica_to_doctor(pb):
    """Replica mode: nvidia-gpu.sock is the agent's own, not NVIDIA's plugin."""
    node = dt.Node("k3s-discrete", sockets=())
    cfg = os.path.join(node.tmp, "sharing.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                "    - name: nvidia.com/gpu\n      replicas: 2\n")
    kub = fk.Kubelet(pb[0], node.path(KDIR))
    kub.start()
    sim = os.path.join(node.tmp, "sim.conf")
    with open(sim, "w") as f:
        f.write("gpus = 1\nmemory = 16Gi\n")
    log = open(os.path.join(node.tmp, "agent.log"), "wb")
    proc = subprocess.Popen(
        [GS, "agent", "--backend", "simulated", "--sim-config", sim, "--kubelet-dir", node.path(KDIR),
         "--state-root", node.path(STATE), "--sharing-config", cfg, "--realtime-slots-per-gpu", "0",
         "--interposer-path", os.path.join(BUILD, "libgpuslice.so"),
         "--pod-resources-socket", node.path(PODRES)], stdout=log, stderr=log)
    try:
        regs = kub.wait_registrations(1)
        tap([r[1].resource_name for r in regs] == ["nvidia.com/gpu"],
            "replica mode registers nvidia.com/gpu", [r[1].resource_name for r in regs])
        _, rep = dt.doctor(node, "--skip-cluster")
        ok = findings(rep, "kubelet.plugin-socket")
        tap(len(ok) == 1 and "nvidia.com/gpu" in ok[0]["title"] and
            not findings(rep, "kubelet.nvidia-plugin-present") and
            not findings(rep, "kubelet.plugin-socket-missing"),
            "doctor in replica mode: the agent's nvidia-gpu.sock is taken for ours",
            rep and [(f["id"], f["title"]) for f in rep["findings"]])
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
        kub.stop()
        node.close()


def test_labels_to_doctor(pb):
    """The NFD labels the agent writes are the ones the doctor's unified-memory check reads."""
    node = dt.Node("k3s-discrete", sockets=())
    agent = NodeAgent(node, pb, extra=("--memory-unit", "64Mi"))
    try:
        labels = read_kv(os.path.join(agent.features, "gpuslice"))
    finally:
        agent.stop()
        node.close()
    tap(labels.get("gpuslice.io/gpu-memory-unit") == "64Mi" and
        labels.get("gpuslice.io/mode") == "fractional" and
        labels.get("gpuslice.io/backend") == "simulated",
        "the agent's labels file: memory unit 64Mi, mode, backend", labels)
    # Those labels on the Jetson node in the API server: the doctor compares
    # each Pod's memory request with its slice in the agent's unit.
    scenario = {"nodes": [dt.k8s_node("orin", {"gpuslice.io/gpu-memory": 96}, labels=labels,
                                      memory="7620424Ki")],
                "pods": [dt.k8s_pod("skimpy", {"gpuslice.io/gpu-memory": 32}, node="orin",
                                    runtime_class="nvidia", memory="256Mi")],
                "runtimeclasses": [dt.NVIDIA_RC], "events": []}
    res = dt.run_cluster("jetson-orin", scenario, node_name="orin")
    rep = res[1]
    tap(findings(rep, "tenant.unified-pod-memory") and not findings(rep, "tenant.unified-unit-unknown"),
        "the doctor reads the agent's unit label: 32 units x 64Mi = 2 GiB against a 256Mi request",
        rep and [(f["id"], f["severity"]) for f in rep["findings"]])


def test_agent_tenant_monitor(pb):
    """Allocate, a tenant under the allocated slice, and the monitor naming its Pod."""
    node = dt.Node("k3s-discrete", sockets=())
    agent = NodeAgent(node, pb)
    try:
        mem = agent.plugin("gpuslice.io/gpu-memory")
        ids = ["gpu0-mem-%04d" % i for i in range(4)]  # 4 x 256 MiB
        resp = mem.allocate(ids).container_responses[0]
        envs = dict(resp.envs)
        mounts = {m.container_path: m.host_path for m in resp.mounts}
        slice_dir = os.path.dirname(mounts.get("/run/gpuslice/limits", "/x/limits"))
        tap(envs.get("GPUSLICE_SLICE_ID") and os.path.basename(slice_dir) == envs["GPUSLICE_SLICE_ID"]
            and os.path.dirname(slice_dir) == agent.state
            and mounts.get("/run/gpuslice/ledger") == os.path.join(slice_dir, "ledger")
            and mounts.get("/run/gpuslice/peers") == agent.state,
            "Allocate mounts the slice's limits and ledger from <state root>/<slice id>", (envs, mounts))
        # A tenant under that slice: the interposer finds it as a container
        # would (the mounted files), here through GPUSLICE_STATE_DIR.
        env = dict(os.environ, GPUSLICE_STATE_DIR=slice_dir,
                   LD_PRELOAD=os.path.join(BUILD, "libgpuslice.so"),
                   LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), GS_FAKE_MEM="16Gi")
        t = subprocess.run([os.path.join(BUILD, "gpuslice-demo"), "256"], env=env,
                           capture_output=True, text=True, timeout=60)
        tap(t.returncode == 0 and "CUDA_ERROR_OUT_OF_MEMORY" in t.stdout + t.stderr,
            "the tenant under the agent's 1 GiB slice gets a clean out-of-memory at its cap",
            t.stdout[-1500:] + t.stderr[-1500:])
        # The kubelet says which Pod holds those device IDs.
        p = agent.podres.pr
        agent.podres.response = p.ListPodResourcesResponse(pod_resources=[p.PodResources(
            name="model-a", namespace="serving", containers=[p.ContainerResources(
                name="server", devices=[p.ContainerDevices(resource_name="gpuslice.io/gpu-memory",
                                                           device_ids=ids)])])])
        m = subprocess.run([GS, "monitor", "--json", "--state-root", agent.state,
                            "--pod-resources-socket", node.path(PODRES)],
                           capture_output=True, text=True, timeout=30)
        data = json.loads(m.stdout) if m.returncode == 0 else {"slices": []}
        sl = data["slices"]
        s = sl[0] if len(sl) == 1 else {}
        tap(len(sl) == 1 and s.get("id") == envs.get("GPUSLICE_SLICE_ID"),
            "the monitor lists the agent's slice, and not its _agent folder", (m.stderr, sl))
        tap(s.get("pod") == "model-a" and s.get("namespace") == "serving" and s.get("container") == "server",
            "the monitor names the Pod from PodResources through the agent's alloc file", s)
        tap(s.get("memory_cap_bytes") == 1 << 30 and s.get("refused_by_cap") == 1 and
            s.get("peak_process_bytes") == 1 << 30 and s.get("cuda_seen"),
            "the monitor shows what the tenant did under the agent's limits: 1 GiB cap, peak 1 GiB, "
            "1 refusal", s)
        # The GPUs as the agent wrote them in its node file (gpu<N>.*), with the
        # slice's cap counted as allocated on the GPU its limits name.
        nf = {}
        with open(os.path.join(agent.state, "_agent", "node")) as f:
            for ln in f:
                if " = " in ln and not ln.startswith("#"):
                    k, v = ln.rstrip("\n").split(" = ", 1)
                    nf[k] = v
        g = (data.get("gpus") or [{}])[0]
        tap(data.get("gpus_from") == "the agent's node file" and g.get("uuid") == nf.get("gpu0.uuid") and
            g.get("name") == nf.get("gpu0.name") and g.get("memory_total_bytes") == int(nf.get("gpu0.memory", -1)) and
            g.get("memory_allocatable_bytes") == int(nf.get("gpu0.advertised", -1)) and
            g.get("memory_allocated_bytes") == 1 << 30 and g.get("slices") == 1 and s.get("gpu") == 0 and
            g.get("memory_free_bytes") == int(nf.get("gpu0.advertised", 0)) - (1 << 30),
            "the monitor's GPU view is the agent's node file: total, allocatable; the slice allocated on it",
            (g, {k: v for k, v in nf.items() if k.startswith("gpu0.")}))
        prom = subprocess.run([GS, "monitor", "--once", "--state-root", agent.state],
                              capture_output=True, text=True, timeout=30)
        tap(prom.returncode == 0 and envs.get("GPUSLICE_SLICE_ID", "?") in prom.stdout,
            "the terminal view lists the slice too", prom.stdout[-800:] + prom.stderr[-800:])
    finally:
        agent.stop()
        node.close()


def ledger_pids(path):
    """The owner pid of every slot of a ledger file (contract/ledger.h: the
    slots start at byte 128, 64 bytes each, the pid first)."""
    import struct
    data = open(path, "rb").read()
    return [struct.unpack_from("<i", data, 128 + 64 * i)[0] for i in range(256)]


def test_dead_owner_not_counted(pb):
    """A tenant in its own pid namespace (as in a container) holds memory and
    is SIGKILLed: the monitor stops counting its bytes at once, though the pid
    is not its to judge, and the agent frees its ledger slot on its own, with
    no process of the slice left to reap it."""
    node = dt.Node("k3s-discrete", sockets=())
    # First an agent that does not reap (within the test): what the monitor
    # says is its own judgment.
    agent = NodeAgent(node, pb, extra=["--ledger-reap-interval", "3600"])
    worker = None
    try:
        mem = agent.plugin("gpuslice.io/gpu-memory")
        resp = mem.allocate(["gpu0-mem-%04d" % i for i in range(4)]).container_responses[0]
        envs = dict(resp.envs)
        slice_dir = os.path.join(agent.state, envs.get("GPUSLICE_SLICE_ID", "?"))
        env = dict(os.environ, GPUSLICE_STATE_DIR=slice_dir,
                   LD_PRELOAD=os.path.join(BUILD, "libgpuslice.so"),
                   LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), GS_FAKE_MEM="16Gi")
        cmd = [os.path.join(BUILD, "tests", "gs-worker"), "direct", "hold", str(512 << 20), "120"]
        own_ns = os.geteuid() == 0 and shutil.which("unshare") and subprocess.run(
            ["unshare", "--pid", "--fork", "true"], capture_output=True).returncode == 0
        if own_ns:  # --kill-child: the namespace's init dies with unshare
            cmd = ["unshare", "--pid", "--fork", "--kill-child"] + cmd
        worker = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        line = worker.stdout.readline()

        def monitor():
            m = subprocess.run([GS, "monitor", "--json", "--state-root", agent.state],
                               capture_output=True, text=True, timeout=30)
            sl = json.loads(m.stdout)["slices"] if m.returncode == 0 else []
            return sl[0] if len(sl) == 1 else {}
        before = monitor()
        tap(line.strip() == "hold rc=0" and before.get("used_bytes") == 512 << 20
            and before.get("processes") == 1,
            "the monitor counts a live tenant's bytes (%s pid namespace)" % ("its own" if own_ns else "our"),
            (line, before))
        worker.kill()  # unshare, and with it (--kill-child) the tenant
        worker.wait()
        after = wait_for(lambda: (lambda s: s if s.get("processes") == 0 else None)(monitor()), 5)
        ledger = os.path.join(slice_dir, "ledger")
        held = [p for p in ledger_pids(ledger) if p]
        tap(after and after.get("used_bytes") == 0 and held,
            "after SIGKILL the monitor counts neither the process nor its bytes, while its ledger "
            "slot still names it", (after, held))
        # An agent that reaps every second (started again over the same state).
        agent.stop()
        agent = NodeAgent(node, pb, extra=["--ledger-reap-interval", "1"])
        freed = wait_for(lambda: all(p == 0 for p in ledger_pids(ledger)), 6)
        tap(freed and "freed" in agent.tail(),
            "the agent frees the dead tenant's ledger slot on its own",
            [p for p in ledger_pids(ledger) if p] if os.path.exists(ledger) else "no ledger")
    finally:
        if worker and worker.poll() is None:
            worker.kill()
            worker.wait()
        agent.stop()
        node.close()


def main():
    if not os.access(GS, os.X_OK) or not shutil.which("protoc"):
        print("1..0 # SKIP gpuslice not built or protoc missing")
        return 77
    import tempfile
    pbdir = tempfile.mkdtemp(prefix="gscontract")
    pb = fk.load_protos(pbdir)
    try:
        test_agent_to_doctor(pb)
        test_replica_to_doctor(pb)
        test_labels_to_doctor(pb)
        test_agent_tenant_monitor(pb)
        test_dead_owner_not_counted(pb)
    finally:
        shutil.rmtree(pbdir, ignore_errors=True)
    print("1..%d" % dt._n)
    return 1 if dt._failed else 0


if __name__ == "__main__":
    sys.exit(main())
