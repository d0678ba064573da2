#!/usr/bin/python3
"""gpuslice agent with dra = on, against a kubelet played by grpcio peers and
the fake API server with resource.k8s.io/v1 (dra_apiserver.py).

Covers: plugin registration (GetInfo, NotifyRegistrationStatus); the node's
ResourceSlice (devices, attributes, consumable memory and cores with their
request policies, allowMultipleAllocations) and its update when a GPU turns
unhealthy (a taint, the next pool generation); NodePrepareResources v1 and
v1beta1 for claims in the shape the scheduler writes them (two models sharing
one GPU of a two-GPU node, a critical model beside a batch job): the slices'
limits, the CDI specs, the answer's CDI device IDs and share IDs; a tenant
under the real interposer in a prepared slice, and the monitor reading it;
the same claim prepared again (same answer), with other content (refused),
bad claims (unknown device, capacity above what was published, not
allocated, other UID, missing, bad priority) each with its own error;
restart idempotency and recovery of a half-made slice; Unprepare (twice).
Run with /usr/bin/python3 (Debian's grpcio)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "doctor"))
import fakekubelet as fk  # noqa: E402
import doctor_test as dt  # noqa: E402

import grpc  # noqa: E402

tap = fk.Tap()
GiB = 1 << 30
MiB = 1 << 20
DRIVER = "gpuslice.io"
NODE = "gpu-1"
REG = "/pluginregistration.Registration"
V1 = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
V1BETA1 = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"


class DraApi(dt.ApiServer):
    """dt.ApiServer's kubeconfig and request log, over dra_apiserver.py."""

    def __init__(self, scenario):
        c = dt.certs()
        self.dir = tempfile.mkdtemp(prefix="gsdraapi")
        sc = os.path.join(self.dir, "scenario.json")
        with open(sc, "w") as f:
            json.dump(scenario, f)
        self.log = os.path.join(self.dir, "requests.log")
        self.slices_file = os.path.join(self.dir, "slices.json")
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, "dra_apiserver.py"), "--cert", c["crt"], "--key", c["key"],
             "--scenario", sc, "--token", self.TOKEN, "--log", self.log, "--slices", self.slices_file],
            stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline().split()[1])
        self.url = "https://127.0.0.1:%d" % self.port

    def slices(self):
        try:
            with open(self.slices_file) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}


def claim(name, uid, results, ns="serving", config=None, allocated=True):
    """A ResourceClaim as the scheduler leaves it: the request in spec, the
    allocation (driver, pool, device, consumed capacity, share ID) and the
    opaque configuration copied from the claim into status."""
    reqs = [{"name": r["request"], "exactly": {"deviceClassName": "gpuslice.io", "capacity": {
        "requests": r.get("consumedCapacity", {})}}} for r in results]
    cfgs = [{"requests": [r["request"] for r in results],
             "opaque": {"driver": DRIVER, "parameters": config}}] if config else []
    c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": name, "namespace": ns, "uid": uid},
         "spec": {"devices": {"requests": reqs, "config": cfgs}},
         "status": {}}
    if allocated:
        c["status"] = {"allocation": {"devices": {
            "results": [dict({"driver": DRIVER, "pool": NODE}, **r) for r in results],
            "config": [dict(x, source="FromClaim") for x in cfgs]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}},
            "reservedFor": [{"resource": "pods", "name": name + "-pod", "uid": uid[::-1]}]}
    return c


def params(prio):
    return {"apiVersion": "gpuslice.io/v1alpha1", "kind": "SliceParameters", "priority": prio}


def result(device, memory=None, cores=None, request="gpu", share="s-1"):
    r = {"request": request, "device": device, "shareID": share}
    cap = {}
    if memory:
        cap["memory"] = memory
    if cores:
        cap["cores"] = cores
    if cap:
        r["consumedCapacity"] = cap
    return r


U_MODEL_A = "0a0a0a0a-1111-4111-8111-000000000001"
U_MODEL_B = "0b0b0b0b-2222-4222-8222-000000000002"
U_BATCH = "0c0c0c0c-3333-4333-8333-000000000003"
U_CRIT = "0d0d0d0d-4444-4444-8444-000000000004"
CLAIMS = [
    # Two models sharing GPU 0 of the two-GPU node.
    claim("model-a-gpu", U_MODEL_A, [result("gpu-0", "3Gi", "30", share="share-a")], config=params("best-effort")),
    claim("model-b-gpu", U_MODEL_B, [result("gpu-0", "2Gi", "20", share="share-b")]),
    # A critical model beside a batch job on GPU 1.
    claim("critical-gpu", U_CRIT, [result("gpu-1", "4Gi", "60", share="share-c")], config=params("critical")),
    claim("batch-gpu", U_BATCH, [result("gpu-1", "6Gi", "40", share="share-d")], ns="batch",
          config=params("best-effort")),
    # The same UID as model-a, other content: a claim prepared twice differently.
    claim("model-a-gpu-again", U_MODEL_A, [result("gpu-0", "5Gi", "30")], config=params("best-effort")),
    # Bad claims.
    claim("unknown-device", "0e000000-0000-4000-8000-000000000001", [result("gpu-7", "1Gi", "10")]),
    claim("other-pool", "0e000000-0000-4000-8000-000000000002", [dict(result("gpu-0", "1Gi", "10"), pool="gpu-9")]),
    claim("too-big", "0e000000-0000-4000-8000-000000000003", [result("gpu-0", "64Gi", "10")]),
    claim("too-many-cores", "0e000000-0000-4000-8000-000000000004", [result("gpu-0", "1Gi", "150")]),
    claim("pending", "0e000000-0000-4000-8000-000000000005", [result("gpu-0", "1Gi", "10")], allocated=False),
    claim("bad-priority", "0e000000-0000-4000-8000-000000000006", [result("gpu-0", "1Gi", "10")],
          config=params("urgent")),
    claim("recreated", "0e000000-0000-4000-8000-000000000007", [result("gpu-0", "1Gi", "10")]),
    # No capacity asked: the request policy's defaults.
    claim("defaults", "0f000000-0000-4000-8000-000000000001", [result("gpu-1")]),
    # A second critical claim on GPU 1 (one realtime slot per GPU).
    claim("critical-two", "0f000000-0000-4000-8000-000000000002", [result("gpu-1", "1Gi", "10")],
          config=params("critical")),
] + [
    # Small claims filling GPU 0 up to max_slices_per_gpu (8) tenants, and one more.
    claim("filler-%d" % i, "0f100000-0000-4000-8000-%012d" % i, [result("gpu-0", "256Mi", "1")]) for i in range(7)
]


def example_claims():
    """The claim templates of deploy/dra/examples, each made a claim and
    allocated as the scheduler would: the capacity asked consumed, the
    opaque configuration copied; two-models on gpu-0 (its selector), the
    critical model and the batch job together on gpu-1."""
    import yaml
    out = []
    for path in sorted(glob.glob(os.path.join(fk.SRC, "deploy", "dra", "examples", "*.yaml"))):
        gpu = "gpu-0" if "two-models" in path else "gpu-1"
        with open(path) as f:
            for i, t in enumerate(d for d in yaml.safe_load_all(f) if d and d["kind"] == "ResourceClaimTemplate"):
                dev = t["spec"]["spec"]["devices"]
                res = [result(gpu, request=r["name"], share="ex-%d" % i, **{
                    k: v for k, v in r["exactly"]["capacity"]["requests"].items()}) for r in dev["requests"]]
                cfg = [c["opaque"]["parameters"] for c in dev.get("config", [])]
                c = claim(t["metadata"]["name"] + "-x1", "0e100000-0000-4000-8000-%012d" % len(out), res,
                          ns="examples", config=cfg[0] if cfg else None)
                out.append(c)
    return out


def read_limits(path):
    return fk.read_limits(path)


def main():
    reg, v1, v1beta1 = fk.load_dra_protos(tempfile.mkdtemp(prefix="gs-dra-pb-"))
    tmp = tempfile.mkdtemp(prefix="gs-dra-")
    kubelet = os.path.join(tmp, "kubelet")  # the kubelet's root dir
    registry, plugins = os.path.join(kubelet, "plugins_registry"), os.path.join(kubelet, "plugins")
    cdi, state = os.path.join(tmp, "cdi"), os.path.join(tmp, "state")
    os.makedirs(registry)
    os.makedirs(plugins)
    health = os.path.join(tmp, "health")
    open(health, "w").close()
    sim = os.path.join(tmp, "sim.conf")
    with open(sim, "w") as f:
        f.write("gpus = 2\nmemory = 24Gi\nhealth_file = %s\n" % health)
    interposer = os.path.join(fk.BUILD, "libgpuslice.so")
    CLAIMS.extend(example_claims())
    api = DraApi({"nodes": [dt.k8s_node(NODE, {})], "resourceclaims": CLAIMS})
    kc = api.kubeconfig()
    args = ["--dra", "on", "--backend", "simulated", "--sim-config", sim, "--plugins-registry-dir", registry,
            "--plugins-dir", plugins, "--cdi-dir", cdi, "--state-root", state, "--interposer-path", interposer,
            "--kubeconfig", kc, "--node-name", NODE, "--pod-resources-socket", "", "--node-labels", "off",
            "--kubelet-dir", os.path.join(tmp, "no-device-plugins")]
    env = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "NODE_NAME")}
    agent = fk.Agent(tmp, "agent", args, env=env).start()
    reg_sock = os.path.join(registry, DRIVER + "-reg.sock")
    dra_sock = os.path.join(plugins, DRIVER, "dra.sock")
    try:
        run(tap, agent, api, reg, v1, v1beta1, reg_sock, dra_sock, state, cdi, health, tmp, args, env)
    finally:
        if agent.proc.poll() is None:
            agent.stop()
        api.close()
    nvml_slice(tap, api, tmp, env, reg, v1)
    shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


def nvml_slice(tap, api, tmp, env, reg_pb, v1_pb):
    """An agent on the fake NVML (two H200s, driver 580.159.04) publishes what NVML says."""
    lib = os.path.join(fk.BUILD, "sim", "libnvidia-ml.so.1")
    d = os.path.join(tmp, "nvml")
    for sub in ("registry", "plugins"):
        os.makedirs(os.path.join(d, sub))
    release, release_claims = os.path.join(d, "release"), os.path.join(d, "release-claims")
    uid = "0a200000-0000-4000-8000-000000000001"
    api2 = DraApi({"nodes": [dt.k8s_node("gpu-2", {})], "hold_slice_writes": release,
                   "hold_claim_reads": release_claims, "resourceclaims": [
                       claim("on-gpu-2", uid, [dict(result("gpu-1", "8Gi", "50"), pool="gpu-2")])]})
    nenv = dict(env, GS_FAKE_NVML_GPUS="2", GS_FAKE_NVML_MEM="141Gi", GS_FAKE_NVML_NAME="NVIDIA H200")
    agent = fk.Agent(d, "agent-nvml", [
        "--dra", "on", "--backend", "nvml", "--nvml-library", lib, "--plugins-registry-dir",
        os.path.join(d, "registry"), "--plugins-dir", os.path.join(d, "plugins"), "--cdi-dir",
        os.path.join(d, "cdi"), "--state-root", os.path.join(d, "state"), "--interposer-path", lib,
        "--kubeconfig", api2.kubeconfig(), "--node-name", "gpu-2", "--pod-resources-socket", "",
        "--node-labels", "off"], env=nenv).start()
    try:
        # A slow API server: the ResourceSlice write is held while the kubelet's calls come.
        held = fk.wait_for(lambda: any(r.startswith("SLICE-POST") for r in api2.requests()))
        reg_sock = os.path.join(d, "registry", DRIVER + "-reg.sock")
        sock = os.path.join(d, "plugins", DRIVER, "dra.sock")
        info = fk.unary(REG, reg_sock, "GetInfo", reg_pb.InfoRequest(), reg_pb.PluginInfo)
        tap.ok(held and info.name == DRIVER and not api2.slices(),
               "while the API server holds the ResourceSlice write, GetInfo is answered (the write is "
               "on a thread of its own)", agent.tail())
        open(release, "w").close()
        # The claim's GET held too: Prepare waits for it, the kubelet's other calls do not.
        result_box = []
        t = threading.Thread(target=lambda: result_box.append(fk.unary(
            V1, sock, "NodePrepareResources", v1_pb.NodePrepareResourcesRequest(claims=[
                v1_pb.Claim(namespace="serving", uid=uid, name="on-gpu-2")]),
            v1_pb.NodePrepareResourcesResponse, timeout=60)))
        t.start()
        reading = fk.wait_for(lambda: any("/resourceclaims/on-gpu-2" in r for r in api2.requests()))
        info = fk.unary(REG, reg_sock, "GetInfo", reg_pb.InfoRequest(), reg_pb.PluginInfo)
        u = fk.unary(V1, sock, "NodeUnprepareResources", v1_pb.NodeUnprepareResourcesRequest(claims=[
            v1_pb.Claim(namespace="serving", uid="0a200000-0000-4000-8000-0000000000ff", name="x")]),
            v1_pb.NodeUnprepareResourcesResponse)
        tap.ok(reading and not result_box and info.name == DRIVER and
               not u.claims["0a200000-0000-4000-8000-0000000000ff"].error,
               "while the API server holds a claim's GET, Prepare waits and GetInfo and "
               "NodeUnprepareResources are answered (claims are read off the loop)", agent.tail())
        open(release_claims, "w").close()
        t.join(60)
        r = result_box[0] if result_box else None
        tap.ok(r is not None and not r.claims[uid].error and r.claims[uid].devices[0].device_name == "gpu-1" and
               os.path.exists(os.path.join(d, "state", "dra-%s-0" % uid, "alloc")),
               "once the claim is read, Prepare writes its slice and answers", (r, agent.tail()))
        sl = fk.wait_for(lambda: api2.slices().get("gpu-2-" + DRIVER))
        devs = {x["name"]: x for x in (sl or {}).get("spec", {}).get("devices", [])}
        at = devs.get("gpu-1", {}).get("attributes", {})
        tap.ok(sorted(devs) == ["gpu-0", "gpu-1"] and at.get("driverVersion") == {"version": "580.159.4"} and
               at.get("model") == {"string": "NVIDIA H200 (simulated)"} and at.get("totalMemory") == {"string": "141Gi"} and
               at.get("uuid", {}).get("string", "").startswith("GPU-") and at.get("simulated") == {"bool": False},
               "NVML backend: the driver version as a semantic version (580.159.04 -> 580.159.4), model, "
               "memory and UUID from NVML", (sl, agent.tail()))
    finally:
        agent.stop()
        api2.close()
    # SIGTERM while the API server still holds the write: the agent leaves at once.
    uid3 = "0a300000-0000-4000-8000-000000000001"
    api3 = DraApi({"nodes": [], "hold_slice_writes": os.path.join(d, "never"),
                   "hold_claim_reads": os.path.join(d, "never"), "resourceclaims": [
                       claim("on-gpu-3", uid3, [dict(result("gpu-0", "1Gi", "10"), pool="gpu-3")])]})
    agent3 = fk.Agent(d, "agent-held", agent.args[:agent.args.index("--kubeconfig")] + [
        "--kubeconfig", api3.kubeconfig(), "--node-name", "gpu-3", "--pod-resources-socket", "",
        "--node-labels", "off"], env=nenv).start()
    try:
        held = fk.wait_for(lambda: any(r.startswith("SLICE-POST") for r in api3.requests()))
        box = []

        def call():
            try:
                box.append(fk.unary(V1, os.path.join(d, "plugins", DRIVER, "dra.sock"), "NodePrepareResources",
                                    v1_pb.NodePrepareResourcesRequest(claims=[v1_pb.Claim(
                                        namespace="serving", uid=uid3, name="on-gpu-3")]),
                                    v1_pb.NodePrepareResourcesResponse, timeout=60))
            except grpc.RpcError as e:
                box.append((e.code(), e.details()))
        t = threading.Thread(target=call)
        t.start()
        reading = fk.wait_for(lambda: any("/resourceclaims/on-gpu-3" in r for r in api3.requests()))
        rc = agent3.stop(timeout=20)
        t.join(30)
        tap.ok(held and rc == 0 and "the ResourceSlice update has not returned within 300 ms of SIGTERM"
               in agent3.tail(), "SIGTERM with a ResourceSlice write in flight: the agent exits 0 without "
               "waiting for it, and says so", agent3.tail())
        tap.ok(reading and box and box[0][0] == grpc.StatusCode.UNAVAILABLE and "the kubelet retries" in box[0][1]
               and "reading claims from the API server has not returned" in agent3.tail() and
               not os.path.exists(os.path.join(d, "state", "dra-%s-0" % uid3)),
               "SIGTERM while a Prepare waits for its claim: the call is answered UNAVAILABLE (the kubelet "
               "retries), nothing is written", (box, agent3.tail()))
    finally:
        api3.close()


def prepare(v1, sock, names, path=V1):
    by = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in CLAIMS}
    cl = []
    for n in names:
        ns, name = n.split("/") if "/" in n else ("serving", n)
        meta = by[(ns, name)]["metadata"]
        cl.append(v1.Claim(namespace=ns, uid=meta["uid"], name=name))
    return fk.unary(path, sock, "NodePrepareResources", v1.NodePrepareResourcesRequest(claims=cl),
                    v1.NodePrepareResourcesResponse)


def unprepare(v1, sock, uids, path=V1):
    req = v1.NodeUnprepareResourcesRequest(claims=[v1.Claim(namespace="serving", uid=u, name="x") for u in uids])
    return fk.unary(path, sock, "NodeUnprepareResources", req, v1.NodeUnprepareResourcesResponse)


def slice_dir(state, uid, i=0):
    return os.path.join(state, "dra-%s-%d" % (uid, i))


def cdi_file(cdi, uid, i=0):
    return os.path.join(cdi, "gpuslice.io-slice_dra-%s-%d.json" % (uid, i))


def run(tap, agent, api, reg, v1, v1beta1, reg_sock, dra_sock, state, cdi, health, tmp, args, env):
    ok = tap.ok
    # ---- registration, as the kubelet's plugin watcher does it
    ok(fk.wait_for(lambda: os.path.exists(reg_sock)), "the registration socket appears in plugins_registry/",
       agent.tail())
    info = fk.unary(REG, reg_sock, "GetInfo", reg.InfoRequest(), reg.PluginInfo)
    ok(info.type == "DRAPlugin" and info.name == DRIVER and info.endpoint == dra_sock and
       list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin"],
       "GetInfo: DRAPlugin %s at plugins/%s/dra.sock, v1 and v1beta1" % (DRIVER, DRIVER), info)
    fk.unary(REG, reg_sock, "NotifyRegistrationStatus", reg.RegistrationStatus(plugin_registered=True),
             reg.RegistrationStatusResponse)
    fk.unary(REG, reg_sock, "NotifyRegistrationStatus",
             reg.RegistrationStatus(plugin_registered=False, error="version mismatch"),
             reg.RegistrationStatusResponse)
    ok(fk.wait_for(lambda: "the kubelet registered DRA driver gpuslice.io" in agent.tail(60) and
                "refused DRA driver gpuslice.io: version mismatch" in agent.tail(60)),
       "NotifyRegistrationStatus: registered and refused are both logged", agent.tail())

    with open(os.path.join(state, "_agent", "node")) as f:
        node = f.read()
    ok("mode = dra\n" in node and "kubelet_dir = %s\n" % os.path.dirname(reg_sock) in node and
       "socket.gpuslice.io = gpuslice.io-reg.sock\n" in node and "resource." not in node,
       "the node file: mode dra, the registration socket for the readiness probe, no device-plugin resources",
       node)

    doc = subprocess.run([os.path.join(fk.BUILD, "gpuslice"), "doctor", "--state-dir", state, "--kubelet-dir",
                          os.path.dirname(os.path.dirname(reg_sock)), "--skip-cluster", "--json"],
                         capture_output=True, text=True, timeout=60)
    fnd = {f["id"]: f for f in json.loads(doc.stdout).get("findings", [])} if doc.stdout.startswith("{") else {}
    ps = fnd.get("kubelet.plugin-socket", {})
    ok(ps.get("severity") == "ok" and "DRA driver socket for gpuslice.io present and listening" in ps.get("title", "")
       and "kubelet.plugin-socket-missing" not in fnd,
       "gpuslice doctor reads the node file's mode: the DRA driver's registration socket is there and listening",
       doc.stdout[-2000:] + doc.stderr[-500:])

    # ---- the ResourceSlice
    sl = fk.wait_for(lambda: api.slices().get(NODE + "-" + DRIVER))
    spec = (sl or {}).get("spec", {})
    devs = {d["name"]: d for d in spec.get("devices", [])}
    ok(spec.get("driver") == DRIVER and spec.get("nodeName") == NODE and spec.get("pool", {}).get("name") == NODE
       and spec["pool"].get("resourceSliceCount") == 1 and sorted(devs) == ["gpu-0", "gpu-1"],
       "one ResourceSlice for the node: driver, nodeName, pool, devices gpu-0 and gpu-1", sl)
    d0 = devs.get("gpu-0", {})
    # (24 GiB - 8 tenants x 608 MiB context reserve) = 19.25 GiB on offer, 77 x 256 MiB.
    mem = d0.get("capacity", {}).get("memory", {})
    cores = d0.get("capacity", {}).get("cores", {})
    ok(mem.get("value") == "19712Mi" and mem.get("requestPolicy") ==
       {"default": "256Mi", "validRange": {"min": "256Mi", "max": "19712Mi", "step": "256Mi"}},
       "memory: what the node offers to slices, requested in steps of the memory unit", mem)
    ten = d0.get("capacity", {}).get("tenants", {})
    ok(ten.get("value") == "8" and ten.get("requestPolicy") ==
       {"default": "1", "validValues": ["1"]},
       "tenants: max_slices_per_gpu (8), each claim consumes 1 (each costs a context reserve)", ten)
    ok(cores.get("value") == "100" and cores.get("requestPolicy") ==
       {"default": "10", "validRange": {"min": "1", "max": "100", "step": "1"}},
       "cores: 100 percent of the GPU's time, 1 to 100 in steps of 1, default 10", cores)
    at = d0.get("attributes", {})
    ok(d0.get("allowMultipleAllocations") is True and at.get("uuid") == {"string": "SIM-GPU-0000"} and
       at.get("model") == {"string": "gpuslice simulated GPU"} and at.get("unifiedMemory") == {"bool": False} and
       at.get("index") == {"int": 0} and at.get("totalMemory") == {"string": "24Gi"} and "taints" not in d0,
       "gpu-0: shared by many claims; model, UUID, index, memory, unified memory; healthy (no taint)", d0)
    posts = [r for r in api.requests() if r.startswith("SLICE-")]
    ok(len(posts) == 1 and posts[0].startswith("SLICE-POST "), "created once with POST", posts)

    # ---- Prepare: two models on GPU 0, a critical model beside a batch job on GPU 1
    r = prepare(v1, dra_sock, ["model-a-gpu", "model-b-gpu", "critical-gpu", "batch/batch-gpu"])
    errs = {k: v.error for k, v in r.claims.items() if v.error}
    ok(not errs and sorted(r.claims) == sorted([U_MODEL_A, U_MODEL_B, U_CRIT, U_BATCH]),
       "NodePrepareResources v1: four claims prepared", errs)
    a = r.claims[U_MODEL_A].devices
    ok(len(a) == 1 and a[0].pool_name == NODE and a[0].device_name == "gpu-0" and
       list(a[0].request_names) == ["gpu"] and a[0].share_id == "share-a" and
       list(a[0].cdi_device_ids) == ["gpuslice.io/slice=dra-%s-0" % U_MODEL_A],
       "the answer: pool, device, request, share ID and the slice's CDI device", a)
    want = {U_MODEL_A: (3 * GiB, "30", "best-effort", "SIM-GPU-0000"),
            U_MODEL_B: (2 * GiB, "20", "best-effort", "SIM-GPU-0000"),
            U_CRIT: (4 * GiB, "60", "critical", "SIM-GPU-0001"),
            U_BATCH: (6 * GiB, "40", "best-effort", "SIM-GPU-0001")}
    for uid, (m, c, prio, dev) in want.items():
        lim = read_limits(os.path.join(slice_dir(state, uid), "limits"))
        ok(int(lim.get("memory", 0)) == m and lim.get("compute") == c and lim.get("priority") == prio and
           lim.get("device") == dev and lim.get("slice_id") == "dra-%s-0" % uid and
           os.path.exists(os.path.join(slice_dir(state, uid), "ledger")) and
           os.path.exists(os.path.join(slice_dir(state, uid), "alloc")),
           "claim %s: limits %d GiB, %s %%, %s on %s; ledger and record written" % (uid[:4], m // GiB, c, prio, dev),
           lim)
    with open(cdi_file(cdi, U_MODEL_A)) as f:
        spec = json.load(f)
    dev = spec.get("devices", [{}])[0]
    ed = dev.get("containerEdits", {})
    mounts = {m["containerPath"]: m for m in ed.get("mounts", [])}
    sd = slice_dir(state, U_MODEL_A)
    ok(spec.get("kind") == "gpuslice.io/slice" and dev.get("name") == "dra-%s-0" % U_MODEL_A and
       "GPUSLICE_SLICE_ID=dra-%s-0" % U_MODEL_A in ed.get("env", []) and
       "NVIDIA_VISIBLE_DEVICES=SIM-GPU-0000" in ed.get("env", []) and "GPUSLICE_SIMULATED=1" in ed.get("env", []),
       "CDI spec: kind gpuslice.io/slice, the slice's device, its id and GPU in the environment", spec)
    ok(mounts.get("/run/gpuslice/limits", {}).get("hostPath") == os.path.join(sd, "limits") and
       "ro" in mounts["/run/gpuslice/limits"]["options"] and
       mounts.get("/run/gpuslice/ledger", {}).get("hostPath") == os.path.join(sd, "ledger") and
       "ro" not in mounts["/run/gpuslice/ledger"]["options"] and
       mounts.get("/usr/local/lib/gpuslice/libgpuslice.so", {}).get("hostPath") ==
       os.path.join(fk.BUILD, "libgpuslice.so") and
       mounts.get("/etc/ld.so.preload", {}).get("hostPath") == os.path.join(state, "_agent", "ld.so.preload") and
       mounts.get("/run/gpuslice/peers", {}).get("hostPath") == state,
       "CDI spec mounts: limits read-only, ledger read-write, the interposer, the preload, the peers", mounts)

    # ---- a tenant under the real interposer in model-b's 2 GiB slice
    tenv = dict(os.environ, GPUSLICE_STATE_DIR=slice_dir(state, U_MODEL_B),
                LD_PRELOAD=os.path.join(fk.BUILD, "libgpuslice.so"),
                LD_LIBRARY_PATH=os.path.join(fk.BUILD, "sim"), GS_FAKE_MEM="16Gi")
    t = subprocess.run([os.path.join(fk.BUILD, "gpuslice-demo"), "256"], env=tenv, capture_output=True,
                       text=True, timeout=60)
    ok(t.returncode == 0 and "CUDA_ERROR_OUT_OF_MEMORY" in t.stdout + t.stderr,
       "a tenant in the prepared 2 GiB slice gets a clean out-of-memory at its cap",
       t.stdout[-800:] + t.stderr[-800:])
    # The kubelet's PodResources names the Pod: the claim's device with its CDI names.
    _, pr = fk.load_protos(tmp)
    podres = fk.PodResources(pr, os.path.join(tmp, "podres.sock"))
    podres.response = pr.ListPodResourcesResponse(pod_resources=[pr.PodResources(
        name="model-b", namespace="serving", containers=[pr.ContainerResources(
            name="server", dynamic_resources=[pr.DynamicResource(
                claim_name="model-b-gpu", claim_namespace="serving", claim_resources=[pr.ClaimResource(
                    cdi_devices=[pr.CDIDevice(name=r.claims[U_MODEL_B].devices[0].cdi_device_ids[0])],
                    driver_name=DRIVER, pool_name=NODE, device_name="gpu-0", share_id="share-b")])])])])
    podres.start()
    try:
        mon = subprocess.run([os.path.join(fk.BUILD, "gpuslice"), "monitor", "--json", "--state-root", state,
                              "--pod-resources-socket", podres.path], capture_output=True, text=True, timeout=30)
    finally:
        podres.stop()
    sl = {s.get("id"): s for s in json.loads(mon.stdout).get("slices", [])} if mon.returncode == 0 else {}
    sl_b = sl.get("dra-%s-0" % U_MODEL_B, {})
    ok(sl_b.get("memory_cap_bytes") == 2 * GiB and sl_b.get("refused_by_cap", 0) >= 1 and
       sl_b.get("peak_process_bytes") == 2 * GiB,
       "the monitor reads the claim's slice: 2 GiB cap, peak 2 GiB, the refusal counted", mon.stdout[-1500:])
    ok((sl_b.get("pod"), sl_b.get("namespace"), sl_b.get("container")) == ("model-b", "serving", "server") and
       not sl.get("dra-%s-0" % U_MODEL_A, {}).get("pod"),
       "the monitor names the claim's Pod from PodResources (the container's claim device, by its CDI name)",
       mon.stdout[-1500:])

    # ---- the same claim again; the same UID with other content; bad claims
    r2 = prepare(v1, dra_sock, ["model-a-gpu"])
    ok(r2 == prepare(v1, dra_sock, ["model-a-gpu"]) and r2.claims[U_MODEL_A] == r.claims[U_MODEL_A],
       "preparing a claim again gives the same answer", r2)
    r3 = prepare(v1, dra_sock, ["model-a-gpu-again"])
    e = r3.claims[U_MODEL_A].error
    ok("already prepared with other content" in e and "memory 3Gi" in e and "memory 5Gi" in e and
       "Unprepare it first" in e and int(read_limits(os.path.join(slice_dir(state, U_MODEL_A), "limits"))
                                          ["memory"]) == 3 * GiB,
       "the same UID with other content is refused, names both and the fix; the slice is unchanged", e)
    bad = prepare(v1, dra_sock, ["unknown-device", "other-pool", "too-big", "too-many-cores", "pending",
                                 "bad-priority", "defaults"])
    by = {c["metadata"]["name"]: bad.claims[c["metadata"]["uid"]].error for c in CLAIMS
          if c["metadata"]["uid"] in bad.claims}
    ok("unknown device gpu-1/gpu-7" in by["unknown-device"] and "gpu-0 to gpu-1" in by["unknown-device"],
       "a device the node does not have: named, with what the node publishes", by["unknown-device"])
    ok("unknown device gpu-9/gpu-0" in by["other-pool"], "a device of another node's pool is refused",
       by["other-pool"])
    ok("asks memory 64Gi" in by["too-big"] and "memory 1 to 19712Mi" in by["too-big"] and
       "lower capacity.requests" in by["too-big"], "memory above what was published: refused with the bound",
       by["too-big"])
    ok("cores 150" in by["too-many-cores"] and "cores 1 to 100" in by["too-many-cores"],
       "cores above 100: refused", by["too-many-cores"])
    ok("not allocated" in by["pending"], "a claim not yet allocated is refused", by["pending"])
    ok("priority 'urgent'" in by["bad-priority"] and "critical or best-effort" in by["bad-priority"],
       "an unknown priority in the opaque parameters is refused with the choices", by["bad-priority"])
    ok(by["defaults"] == "" and int(read_limits(os.path.join(slice_dir(state, "0f000000-0000-4000-8000-000000000001"),
                                                             "limits"))["memory"]) == 256 * MiB,
       "a claim that asks no capacity gets the request policy's defaults (one memory unit)", by)
    crit2 = prepare(v1, dra_sock, ["critical-two"]).claims["0f000000-0000-4000-8000-000000000002"].error
    ok("already holds 1 critical slice" in crit2 and "realtime_slots_per_gpu = 1" in crit2,
       "a second critical claim on a GPU with one realtime slot is refused (the scheduler does not see "
       "priorities)", crit2)
    fill = prepare(v1, dra_sock, ["filler-%d" % i for i in range(7)])
    ferr = [fill.claims["0f100000-0000-4000-8000-%012d" % i].error for i in range(7)]
    ok(ferr[:6] == [""] * 6 and "GPU 0 (gpu-0) already holds 8 slices" in ferr[6] and
       "max_slices_per_gpu" in ferr[6],
       "GPU 0 takes 8 tenants (two models and six small claims); a ninth is refused", ferr)
    unprepare(v1, dra_sock, ["0f100000-0000-4000-8000-%012d" % i for i in range(7)])
    ok(not any(os.path.exists(slice_dir(state, c["metadata"]["uid"])) for c in CLAIMS
               if c["metadata"]["name"] in ("unknown-device", "too-big", "pending", "bad-priority")),
       "bad claims leave nothing on disk")
    other = fk.unary(V1, dra_sock, "NodePrepareResources", v1.NodePrepareResourcesRequest(claims=[
        v1.Claim(namespace="serving", uid="0e000000-0000-4000-8000-00000000ffff", name="recreated"),
        v1.Claim(namespace="serving", uid="0e000000-0000-4000-8000-00000000fffe", name="no-such-claim"),
        v1.Claim(namespace="serving", uid="../../etc", name="recreated")]), v1.NodePrepareResourcesResponse)
    ok("UID 0e000000-0000-4000-8000-000000000007" in other.claims["0e000000-0000-4000-8000-00000000ffff"].error
       and "deleted and made again" in other.claims["0e000000-0000-4000-8000-00000000ffff"].error,
       "a claim the API server has under another UID is refused",
       other.claims["0e000000-0000-4000-8000-00000000ffff"].error)
    ok("HTTP 404" in other.claims["0e000000-0000-4000-8000-00000000fffe"].error and
       "no-such-claim" in other.claims["0e000000-0000-4000-8000-00000000fffe"].error,
       "a missing claim: the API server's answer", other.claims["0e000000-0000-4000-8000-00000000fffe"].error)
    ok("namespace, name and UID" in other.claims["../../etc"].error, "a UID that is no UID is refused",
       other.claims["../../etc"].error)
    code = None
    with grpc.insecure_channel("unix:" + dra_sock) as ch:
        try:
            ch.unary_unary(V1 + "/NodePrepareResources")(b"\xff\xff\xff", timeout=10)
        except grpc.RpcError as ex:
            code = ex.code()
    ok(code == grpc.StatusCode.INVALID_ARGUMENT, "a request that is not a NodePrepareResourcesRequest: "
       "INVALID_ARGUMENT", code)

    # ---- v1beta1: the same messages; no share ID
    rb = prepare(v1beta1, dra_sock, ["model-b-gpu"], path=V1BETA1)
    db = rb.claims[U_MODEL_B].devices
    raw = v1.NodePrepareResourcesResponse.FromString(rb.SerializeToString())
    ok(not rb.claims[U_MODEL_B].error and len(db) == 1 and db[0].device_name == "gpu-0" and
       list(db[0].cdi_device_ids) == ["gpuslice.io/slice=dra-%s-0" % U_MODEL_B] and
       raw.claims[U_MODEL_B].devices[0].share_id == "",
       "NodePrepareResources v1beta1 answers the same device, without a share ID", rb)

    # ---- health: a GPU turns unhealthy -> its device is tainted, the pool's next generation
    with open(health, "w") as f:
        f.write("1 79\n")
    sl2 = fk.wait_for(lambda: (lambda s: s if s.get("spec", {}).get("pool", {}).get("generation") == 2 else None)(
        api.slices().get(NODE + "-" + DRIVER, {})))
    d2 = {d["name"]: d for d in (sl2 or {}).get("spec", {}).get("devices", [])}
    ok(d2.get("gpu-1", {}).get("taints") == [{"key": "gpuslice.io/unhealthy", "value": "true",
                                              "effect": "NoSchedule"}] and "taints" not in d2.get("gpu-0", {}),
       "XID 79 on GPU 1: the ResourceSlice is replaced (generation 2) with gpu-1 tainted NoSchedule", sl2)
    ok([r.split(" ", 1)[0] for r in api.requests() if r.startswith("SLICE-")] == ["SLICE-POST", "SLICE-PUT"],
       "the update is a PUT of the same object", [r[:40] for r in api.requests() if r.startswith("SLICE-")])

    # ---- restart: prepared claims stay; a half-made slice and a stray spec go
    rc = agent.stop()
    ok(rc == 0 and os.path.exists(os.path.join(slice_dir(state, U_MODEL_A), "alloc")),
       "SIGTERM: the agent exits 0 and the prepared slices stay", rc)
    half = slice_dir(state, "0e000000-0000-4000-8000-00000000dead")
    os.makedirs(half)
    shutil.copy(os.path.join(slice_dir(state, U_MODEL_A), "limits"), os.path.join(half, "limits"))
    with open(cdi_file(cdi, "0e000000-0000-4000-8000-00000000dead"), "w") as f:
        f.write("{}")
    os.unlink(cdi_file(cdi, U_MODEL_B))  # lost: recovery writes it again
    agent2 = fk.Agent(tmp, "agent2", args, env=env).start()
    try:
        ok(fk.wait_for(lambda: os.path.exists(reg_sock) and os.path.exists(dra_sock)), "the restarted agent serves",
           agent2.tail())
        os.unlink(reg_sock)  # as a kubelet cleaning its plugins_registry/ would
        back = fk.wait_for(lambda: os.path.exists(reg_sock) and
                           fk.unary(REG, reg_sock, "GetInfo", reg.InfoRequest(), reg.PluginInfo).name == DRIVER)
        ok(back and "a DRA socket disappeared: serving again" in agent2.tail(40),
           "a deleted registration socket is served again at once (inotify), and answers GetInfo", agent2.tail())
        ok(not os.path.exists(half) and not os.path.exists(cdi_file(cdi, "0e000000-0000-4000-8000-00000000dead")),
           "restart: a slice without a record (Prepare cut short) and its spec are removed", agent2.tail())
        ok(os.path.exists(cdi_file(cdi, U_MODEL_B)), "restart: a committed slice's lost CDI spec is written again")
        r4 = prepare(v1, dra_sock, ["model-a-gpu", "model-b-gpu"])
        ok(r4.claims[U_MODEL_A] == r.claims[U_MODEL_A] and r4.claims[U_MODEL_B] == r.claims[U_MODEL_B],
           "after a restart, preparing the same claims gives the same answers", r4)
        ok(fk.wait_for(lambda: "ResourceSlice" in agent2.tail(80) and "generation 3" in agent2.tail(80)),
           "the restarted agent publishes its ResourceSlice again (the next generation)", agent2.tail())

        # ---- Unprepare (v1 and v1beta1), twice
        u = unprepare(v1, dra_sock, [U_MODEL_A, U_CRIT])
        ub = unprepare(v1beta1, dra_sock, [U_MODEL_B], path=V1BETA1)
        ok(all(not x.error for x in list(u.claims.values()) + list(ub.claims.values())) and
           sorted(u.claims) == sorted([U_MODEL_A, U_CRIT]) and
           not any(os.path.exists(slice_dir(state, x)) or os.path.exists(cdi_file(cdi, x))
                   for x in (U_MODEL_A, U_MODEL_B, U_CRIT)) and os.path.exists(slice_dir(state, U_BATCH)),
           "NodeUnprepareResources (v1, v1beta1): the claims' slices and CDI specs are gone, others stay", u)
        # ---- deploy/dra/examples' claims through the agent
        ex = [c for c in CLAIMS if c["metadata"]["namespace"] == "examples"]
        rx = prepare(v1, dra_sock, ["examples/" + c["metadata"]["name"] for c in ex])
        got, want = {}, {}
        for c in ex:
            uid, name = c["metadata"]["uid"], c["metadata"]["name"]
            cap = c["status"]["allocation"]["devices"]["results"][0].get("consumedCapacity", {})
            cfg = c["status"]["allocation"]["devices"]["config"]
            prio = cfg[0]["opaque"]["parameters"]["priority"] if cfg else "best-effort"
            lim = read_limits(os.path.join(slice_dir(state, uid), "limits")) if not rx.claims[uid].error else {}
            got[name] = (rx.claims[uid].error, lim.get("memory"), lim.get("compute"), lim.get("priority"))
            want[name] = ("", str(int(cap["memory"][:-2]) * GiB), cap["cores"], prio)
        ok(len(ex) == 4 and got == want and want["critical-model-gpu-x1"][3] == "critical",
           "deploy/dra/examples: each claim template, allocated, gets the slice it asks for (memory, cores, "
           "priority)", (got, want))
        unprepare(v1, dra_sock, [c["metadata"]["uid"] for c in ex])
        u2 = unprepare(v1, dra_sock, [U_MODEL_A])
        ok(not u2.claims[U_MODEL_A].error, "unpreparing again is no error", u2)
        ok(agent2.alive(), "the agent is still up after every bad request", agent2.tail())
    finally:
        rc2 = agent2.stop()
    ok(rc2 == 0, "SIGTERM: the restarted agent exits 0", agent2.tail())


if __name__ == "__main__":
    sys.exit(main())
