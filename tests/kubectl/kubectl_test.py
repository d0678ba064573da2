#!/usr/bin/python3
"""kubectl-gpuslice (the kubectl plugin) against the fake API server
(tests/doctor/fake_apiserver.py, over TLS with a bearer token), with real
programs behind it: `request` reads the nodes' unit labels; `top` reads a real
`gpuslice monitor --listen` through the pods/proxy path, over a slice that a
real `gpuslice run` kept and the Pod the kubelet's PodResources (played by
grpcio) names; `doctor` runs the real `gpuslice doctor` over a node fixture
through the pods/exec WebSocket. TAP output."""
import json
import os
import re
import shutil
import subprocess
import time
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(TESTS, "doctor"))
sys.path.insert(0, os.path.join(TESTS, "agent"))
from tap import Tap  # noqa: E402
import doctor_test as dt  # noqa: E402

BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(os.path.dirname(TESTS), "build"))
GS = os.path.join(BUILD, "gpuslice")
tap = Tap()
ok = tap.ok

# The installed name: kubectl runs `kubectl-gpuslice ARGS` for `kubectl gpuslice ARGS`.
BIN = tempfile.mkdtemp(prefix="gs-kubectl-bin-")
PLUGIN = os.path.join(BIN, "kubectl-gpuslice")
os.symlink(os.path.abspath(GS), PLUGIN)
HOME = tempfile.mkdtemp(prefix="gs-kubectl-home-")  # no ~/.kube/config of the machine's
ENV = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
ENV["HOME"] = HOME


def plugin(*args, kubeconfig=None, env=None):
    a = [PLUGIN] + (["--kubeconfig", kubeconfig] if kubeconfig else []) + list(args)
    return subprocess.run(a, capture_output=True, text=True, timeout=120, env=env or ENV)


def node(name, unit=None, mode=None):
    labels = {"gpuslice.io/gpu": "true"}
    if unit:
        labels["gpuslice.io/gpu-memory-unit"] = unit
    if mode:
        labels["gpuslice.io/mode"] = mode
    return dt.k8s_node(name, {"gpuslice.io/gpu-memory": 64}, labels=labels)


def agent_pod(name, node_name, port=9402, phase="Running", port_name="monitor"):
    ports = [{"name": port_name, "containerPort": port, "protocol": "TCP"}] if port else []
    return {"metadata": {"name": name, "namespace": "gpuslice-system",
                         "labels": {"app.kubernetes.io/name": "gpuslice-agent"}},
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "agent", "image": "gpuslice/gpuslice:0.1.0",
                                     "ports": ports}]},
            "status": {"phase": phase}}


def with_api(scenario, fn):
    api = dt.ApiServer(scenario)
    try:
        return fn(api, api.kubeconfig())
    finally:
        api.close()


# ---------------------------------------------------------------- request, offline

p = plugin("request", "3Gi", "--compute", "30", "--unit", "256Mi")
want = ("resources:\n  limits:\n    gpuslice.io/gpu-memory: 12  # 3 GiB\n"
        "    gpuslice.io/gpu-compute: 30  # % of one GPU\n")
ok(p.returncode == 0 and want in p.stdout and "not a whole number" not in p.stdout,
   "request 3Gi --compute 30 --unit 256Mi: 12 units and 30 % (exact, no rounding note)", p.stdout + p.stderr)
p = plugin("request", "3000Mi", "--unit", "256Mi", "--realtime")
ok(p.returncode == 0 and "gpuslice.io/gpu-memory: 12  # 3 GiB" in p.stdout and
   "# 3000Mi is not a whole number of units: rounded up to 12 units, 3 GiB" in p.stdout and
   "gpuslice.io/realtime: 1" in p.stdout and "gpu-compute" not in p.stdout,
   "request 3000Mi rounds up to whole units and says so; --realtime adds the slot", p.stdout)
for spelled in ("2048Mi", "2048MiB", "2Gi", "2GiB"):
    p = plugin("request", spelled, "--unit", "512MiB")
    ok(p.returncode == 0 and "gpuslice.io/gpu-memory: 4  # 2 GiB" in p.stdout,
       "request %s at --unit 512MiB: 4 units" % spelled, p.stdout + p.stderr)
p = plugin("request", "2048", "--unit", "256Mi")
ok(p.returncode == 2 and "'2048' has no unit: write 2048Mi for MiB, or 2048B" in p.stderr and not p.stdout,
   "a bare number is refused with the hint, like gpuslice run --memory", p.stderr)
p = plugin("request", "1Gi", "--unit", "256")
ok(p.returncode == 2 and "--unit" in p.stderr and "'256' has no unit" in p.stderr,
   "a bare --unit is refused with the hint", p.stderr)
p = plugin("request", "1Gi", "--compute", "130", "--unit", "256Mi")
ok(p.returncode == 2 and "--compute" in p.stderr and "1 to 100" in p.stderr, "--compute 130 is refused", p.stderr)
p = plugin("request", "--unit", "256Mi")
ok(p.returncode == 2 and "give one size" in p.stderr, "request without a size is a usage error", p.stderr)
p = plugin("bogus")
ok(p.returncode == 2 and "unknown command 'bogus'" in p.stderr, "an unknown command exits 2", p.stderr)
h = plugin("--help")
h2 = subprocess.run([GS, "help", "kubectl"], capture_output=True, text=True)
ok(h.returncode == 0 and h.stdout.startswith("usage: kubectl gpuslice") and
   h2.stdout.startswith("usage: gpuslice kubectl") and
   h.stdout.replace("kubectl gpuslice", "X") == h2.stdout.replace("gpuslice kubectl", "X"),
   "kubectl gpuslice --help and gpuslice help kubectl print the same text under their names", h.stdout)

# ---------------------------------------------------------------- request, from the nodes' labels


def case_one(api, kc):
    p = plugin("request", "3Gi", "--compute", "30", kubeconfig=kc)
    ok(p.returncode == 0 and "gpuslice.io/gpu-memory: 12  # 3 GiB" in p.stdout and
       "node gpu-1, label gpuslice.io/gpu-memory-unit" in p.stdout,
       "request reads the unit from the node's label through the API server", p.stdout + p.stderr)
    reqs = api.requests()
    ok(reqs == ["GET /api/v1/nodes?labelSelector=gpuslice.io%2Fgpu-memory-unit&limit=500"],
       "one GET: the nodes that carry the unit label", reqs)


with_api({"nodes": [node("gpu-1", "256Mi"), dt.k8s_node("cpu-1", {})]}, case_one)


def case_two(api, kc):
    p = plugin("request", "3Gi", kubeconfig=kc)
    ok(p.returncode == 1 and "gpu-1 256Mi" in p.stderr and "gpu-2 1Gi" in p.stderr and "--node" in p.stderr,
       "nodes with different units: refused, naming each and asking for --node", p.stderr)
    p = plugin("request", "3Gi", "--node", "gpu-2", kubeconfig=kc)
    ok(p.returncode == 0 and "gpuslice.io/gpu-memory: 3  # 3 GiB" in p.stdout and "node gpu-2" in p.stdout,
       "--node gpu-2: that node's 1Gi unit", p.stdout + p.stderr)
    ok("GET /api/v1/nodes/gpu-2" in api.requests(), "--node GETs that one Node", api.requests())
    p = plugin("request", "3Gi", "--node", "cpu-9", kubeconfig=kc)
    ok(p.returncode == 1 and 'nodes "cpu-9" not found' in p.stderr, "an unknown --node is the API's 404",
       p.stderr)
    p = plugin("request", "3Gi", "--node", "gpu-3", kubeconfig=kc)
    ok(p.returncode == 1 and "replica mode" in p.stderr and "nvidia.com/gpu" in p.stderr,
       "a node in replica mode: ask for nvidia.com/gpu instead", p.stderr)
    p = plugin("request", "3Gi", "--node", "cpu-1", kubeconfig=kc)
    ok(p.returncode == 1 and "no label gpuslice.io/gpu-memory-unit" in p.stderr and "--unit" in p.stderr,
       "a node without the label: says why and offers --unit", p.stderr)


with_api({"nodes": [node("gpu-1", "256Mi"), node("gpu-2", "1Gi"), dt.k8s_node("cpu-1", {}),
                    dict(node("gpu-3", "256Mi", mode="replica"),
                         metadata={"name": "gpu-3", "labels": {"gpuslice.io/mode": "replica",
                                                                "gpuslice.io/x": "y"}})]},
         case_two)


def case_dra(api, kc):
    """Nodes whose agent is a DRA driver (gpuslice.io/mode=dra): a claim's spec in bytes and percent."""
    import yaml
    p = plugin("request", "3000Mi", "--compute", "30", "--realtime", kubeconfig=kc)
    doc = yaml.safe_load(p.stdout) if p.returncode == 0 else {}
    req = (doc or {}).get("spec", {}).get("spec", {}).get("devices", {})
    ex = (req.get("requests") or [{}])[0].get("exactly", {})
    par = ((req.get("config") or [{}])[0].get("opaque") or {}).get("parameters", {})
    ok(ex.get("deviceClassName") == "gpuslice.io" and ex.get("capacity", {}).get("requests") ==
       {"memory": "3Gi", "cores": "30"} and par.get("priority") == "critical" and
       "rounded up to 12 units, 3 GiB" in p.stdout,
       "a DRA node: the ResourceClaimTemplate's spec, memory rounded up to the node's unit, cores, "
       "critical in the opaque parameters (valid YAML)", p.stdout + p.stderr)
    p = plugin("request", "3Gi", "--node", "gpu-1", kubeconfig=kc)
    ok(p.returncode == 0 and "memory: 3Gi" in p.stdout and "cores" not in p.stdout and "config" not in p.stdout,
       "without --compute and --realtime: memory only (cores get the request policy's default)", p.stdout)


with_api({"nodes": [node("gpu-1", "256Mi", mode="dra"), node("gpu-2", "256Mi", mode="dra")]}, case_dra)


def case_mixed(api, kc):
    p = plugin("request", "3Gi", kubeconfig=kc)
    ok(p.returncode == 1 and "DRA driver" in p.stderr and "--node" in p.stderr,
       "DRA and device-plugin nodes mixed: refused, asking for --node", p.stderr)


with_api({"nodes": [node("gpu-1", "256Mi", mode="dra"), node("gpu-2", "256Mi")]}, case_mixed)


def case_none(api, kc):
    p = plugin("request", "3Gi", kubeconfig=kc)
    ok(p.returncode == 1 and "no node has the label" in p.stderr and "--unit" in p.stderr,
       "no labelled node: says so and offers --unit", p.stderr)


with_api({"nodes": [dt.k8s_node("cpu-1", {})]}, case_none)


def case_forbidden(api, kc):
    p = plugin("request", "3Gi", kubeconfig=kc)
    ok(p.returncode == 1 and "HTTP 403" in p.stderr and "get and list on nodes" in p.stderr,
       "forbidden: the API's answer and the rights it needs", p.stderr)


with_api({"nodes": [node("gpu-1", "256Mi")], "forbid": ["/api/v1/nodes"]}, case_forbidden)
api = dt.ApiServer({"nodes": [node("gpu-1", "256Mi")]})
p = plugin("request", "3Gi", kubeconfig=api.kubeconfig(token="wrong"))
api.close()
ok(p.returncode == 1 and "HTTP 401" in p.stderr, "a wrong token: 401 said", p.stderr)
p = plugin("request", "3Gi", env=dict(ENV, KUBECONFIG=os.path.join(HOME, "missing")))
ok(p.returncode == 1 and "missing does not exist" in p.stderr, "a missing kubeconfig is named", p.stderr)

# ---------------------------------------------------------------- top: pods/proxy to a real monitor

import fakekubelet as fk  # noqa: E402

root = tempfile.mkdtemp(prefix="gs-kubectl-top-")
r = subprocess.run([GS, "run", "--simulated", "--memory", "1Gi", "--compute", "20", "--keep-state",
                    "--state-root", root, "--", os.path.join(BUILD, "gpuslice-demo"), "256"],
                   capture_output=True, text=True, timeout=120)
ok(r.returncode == 0, "a slice kept by gpuslice run on the simulated GPU", r.stderr[-400:])
sid = [d for d in os.listdir(root) if d.startswith("run-")][0]
with open(os.path.join(root, sid, "alloc"), "w") as f:
    f.write("# test\ngpu 0\ndevice gpuslice.io/gpu-memory gpu0-mem-0003\n")
tmp = tempfile.mkdtemp(prefix="gs-kubectl-pr-")
dp, pr = fk.load_protos(tmp)
sock = os.path.join(tmp, "podres.sock")
podres = fk.PodResources(pr, sock)
podres.response = pr.ListPodResourcesResponse(pod_resources=[pr.PodResources(
    name="llm", namespace="models", containers=[pr.ContainerResources(name="server", devices=[
        pr.ContainerDevices(resource_name="gpuslice.io/gpu-memory", device_ids=["gpu0-mem-0003"])])])])
podres.start()
mon = subprocess.Popen([GS, "monitor", "--listen", "127.0.0.1:0", "--state-root", root,
                        "--pod-resources-socket", sock], stderr=subprocess.PIPE, text=True)
m = re.search(r"http://127\.0\.0\.1:(\d+)", mon.stderr.readline())
ok(m is not None, "a real monitor serves /api/slices")
murl = "http://127.0.0.1:%s" % (m.group(1) if m else "1")
pods = [agent_pod("gpuslice-agent-aaaaa", "gpu-1"), agent_pod("gpuslice-agent-bbbbb", "gpu-2"),
        agent_pod("gpuslice-agent-ccccc", "gpu-3", phase="Pending"),
        dt.k8s_pod("llm", {"gpuslice.io/gpu-memory": 4}, node="gpu-1", ns="models")]


def case_top(api, kc):
    p = plugin("top", kubeconfig=kc)
    lines = p.stdout.splitlines()
    row = [ln for ln in lines if ln.startswith("gpu-1")]
    ok(len(row) == 1 and "models/llm/server" in row[0] and sid in row[0] and "0 B / 1 GiB (0%)" in row[0] and
       "20%" in row[0] and row[0].split()[-1] == "finished",
       "top: node, namespace/pod/container, slice, memory used/cap, compute, the monitor's state (its "
       "processes are gone: finished)", p.stdout + p.stderr)
    ok(lines and lines[0].split()[:2] == ["NODE", "NAMESPACE/POD/CONTAINER"], "top has a header", p.stdout)
    ok(p.returncode == 1 and "node gpu-2: the monitor in Pod gpuslice-agent-bbbbb did not answer" in p.stderr and
       "HTTP 503" in p.stderr, "a node whose monitor cannot be reached is named (exit 1), the others shown",
       p.stderr)
    reqs = api.requests()
    ok("GET /api/v1/namespaces/gpuslice-system/pods?labelSelector=app.kubernetes.io%2Fname%3Dgpuslice-agent"
       "&limit=500" in reqs and
       "GET /api/v1/namespaces/gpuslice-system/pods/gpuslice-agent-aaaaa:9402/proxy/api/slices" in reqs and
       not any("ccccc" in x for x in reqs) and all(x.startswith("GET ") for x in reqs),
       "top lists the agent's Pods and GETs each running one's monitor through pods/proxy, nothing else",
       reqs)
    p = plugin("top", "--node", "gpu-1", kubeconfig=kc)
    ok(p.returncode == 0 and "models/llm/server" in p.stdout and "gpu-2" not in p.stderr,
       "top --node gpu-1: that node only (a fieldSelector), exit 0", p.stdout + p.stderr)
    ok(any("fieldSelector=spec.nodeName%3Dgpu-1" in x for x in api.requests()), "--node is a fieldSelector",
       api.requests())
    p = plugin("top", "--node", "gpu-1", "-n", "other", kubeconfig=kc)
    ok(p.returncode == 0 and "(no slices in that namespace)" in p.stdout, "-n other hides the models Pod",
       (p.returncode, p.stdout, p.stderr))
    p = plugin("top", "--node", "gpu-1", "-n", "models", kubeconfig=kc)
    ok(p.returncode == 0 and "models/llm/server" in p.stdout, "-n models keeps it", p.stdout)
    p = plugin("top", "--node", "gpu-9", kubeconfig=kc)
    ok(p.returncode == 1 and "no running Pod" in p.stderr and "gpu-9" in p.stderr,
       "no agent on that node: said", p.stderr)


with_api({"nodes": [node("gpu-1", "256Mi"), node("gpu-2", "256Mi")], "pods": pods,
          "proxy": {"gpuslice-agent-aaaaa:9402": murl}}, case_top)


def case_top_port(api, kc):
    p = plugin("top", kubeconfig=kc)
    ok(p.returncode == 1 and "no containerPort named monitor" in p.stderr and "--port" in p.stderr,
       "a Pod without the monitor's named port: says so and offers --port", p.stderr)
    p = plugin("top", "--port", "9555", kubeconfig=kc)
    ok(p.returncode == 0 and "models/llm/server" in p.stdout, "--port 9555 reaches it", p.stdout + p.stderr)


with_api({"pods": [agent_pod("gpuslice-agent-aaaaa", "gpu-1", port=9555, port_name="http")],
          "proxy": {"gpuslice-agent-aaaaa:9555": murl}}, case_top_port)


mon2 = subprocess.Popen([GS, "monitor", "--listen", "127.0.0.1:0", "--state-root", root,
                         "--pod-resources-socket", ""], stderr=subprocess.PIPE, text=True)
m2 = re.search(r"http://127\.0\.0\.1:(\d+)", mon2.stderr.readline())


def case_top_unknown(api, kc):
    p = plugin("top", kubeconfig=kc)
    row = [ln for ln in p.stdout.splitlines() if ln.startswith("gpu-1")]
    ok(p.returncode == 0 and len(row) == 1 and "(Pod unknown)" in row[0] and sid in row[0] and
       "node gpu-1: the monitor does not know the Pods: " in p.stderr,
       "a monitor that cannot ask the kubelet: the slice shown as (Pod unknown), and the monitor's reason",
       p.stdout + p.stderr)


with_api({"pods": [agent_pod("gpuslice-agent-aaaaa", "gpu-1")],
          "proxy": {"gpuslice-agent-aaaaa:9402": "http://127.0.0.1:%s" % (m2.group(1) if m2 else "1")}},
         case_top_unknown)
mon2.terminate()
mon2.wait()


def case_top_forbidden(api, kc):
    p = plugin("top", kubeconfig=kc)
    ok(p.returncode == 1 and "HTTP 403" in p.stderr and "pods/proxy" in p.stderr,
       "top forbidden: names the rights (list pods, get pods/proxy)", p.stderr)


with_api({"pods": pods, "forbid": ["/api/v1/namespaces/gpuslice-system/pods"]}, case_top_forbidden)
mon.terminate()
mon.wait()
podres.stop()
shutil.rmtree(root, ignore_errors=True)
shutil.rmtree(tmp, ignore_errors=True)

# ---------------------------------------------------------------- doctor: pods/exec, the real doctor

fix = dt.Node("k3s-discrete")
exec_spec = {"container": "agent", "programs": {"gpuslice": os.path.abspath(GS)}, "paths": {"/host": fix.root}}
direct = subprocess.run([GS, "doctor", "--root", fix.root, "--node", "gpu-1", "--skip-cluster"],
                        capture_output=True, text=True, timeout=60)
direct_json = subprocess.run([GS, "doctor", "--root", fix.root, "--node", "gpu-1", "--skip-cluster", "--json"],
                             capture_output=True, text=True, timeout=60)


def case_doctor(api, kc):
    p = plugin("doctor", "--node", "gpu-1", "--", "--skip-cluster", kubeconfig=kc)
    ok(p.returncode == direct.returncode and p.stdout == direct.stdout and len(p.stdout) > 1000,
       "doctor over pods/exec: the node's report and exit status, as the doctor gives them there (%d bytes, "
       "exit %d)" % (len(direct.stdout), direct.returncode), p.stdout[-600:] + p.stderr)
    # The server's thread notes the plugin's close frame after reading it, which may be
    # after the plugin has exited: wait for the note (a few seconds at most).
    deadline = time.time() + 5
    reqs = api.requests()
    while not any(r.startswith("CLOSE ") for r in reqs) and time.time() < deadline:
        time.sleep(0.02)
        reqs = api.requests()
    ok("EXEC gpuslice doctor --root /host --node gpu-1 --skip-cluster" in reqs,
       "the command run in the agent's container: the doctor over the host at /host, for its node", reqs)
    ok("PONG masked same" in reqs and "CLOSE masked 1000" in reqs,
       "the plugin answers the server's ping and closes, masked as RFC 6455 wants", reqs)
    p = plugin("doctor", "--node", "gpu-1", "--", "--skip-cluster", "--json", kubeconfig=kc)
    got = json.loads(p.stdout) if p.stdout.startswith("{") else {}
    want = json.loads(direct_json.stdout)
    ok(p.returncode == direct_json.returncode and
       [f["id"] for f in got.get("findings", [])] == [f["id"] for f in want["findings"]],
       "options after -- reach the doctor: --json", p.stdout[:300] + p.stderr)
    p = plugin("doctor", "--", "--skip-cluster", kubeconfig=kc)
    ok(p.returncode == 2 and "several nodes (gpu-1, gpu-2)" in p.stderr and "--node" in p.stderr,
       "two agents and no --node: asks which", p.stderr)
    p = plugin("doctor", "--node", "gpu-1", "--", "--grace", "x", kubeconfig=kc)
    ok(p.returncode == 2 and "--grace 'x'" in p.stderr, "the doctor's own usage error and exit 2 come back",
       p.stderr)
    p = plugin("doctor", "--node", "gpu-1", "--container", "sidecar", kubeconfig=kc)
    ok(p.returncode == 1 and "HTTP 400" in p.stderr and "container sidecar is not valid" in p.stderr,
       "a wrong --container: the API server's refusal", p.stderr)
    p = plugin("doctor", "--node", "gpu-2", kubeconfig=kc)
    ok(p.returncode == 1 and "HTTP 403" in p.stderr and "pods/exec" in p.stderr,
       "exec forbidden: the rights it needs (create pods/exec)", p.stderr)


with_api({"pods": pods[:2], "exec": {"gpuslice-agent-aaaaa": exec_spec},
          "forbid": ["/api/v1/namespaces/gpuslice-system/pods/gpuslice-agent-bbbbb/exec"]}, case_doctor)
fix.close()

# ---------------------------------------------------------------- doctor: a server that breaks the protocol

HOSTILE = {"huge": "above 16 MiB", "masked": "masked frame", "opcode": "unknown frame opcode 3",
           "bigping": "control frame longer than 125", "cut": "frame cut short",
           "nostatus": "ended before the command's exit status", "failure": "container agent is not running",
           "badaccept": "Sec-WebSocket-Accept", "noproto": "v4.channel.k8s.io"}
HOSTILE.update({"garbage:%d" % i: "" for i in range(12)})
pods_h = [agent_pod("gpuslice-agent-%s" % re.sub(r"\W", "", h).lower(), "n-%d" % i)
          for i, h in enumerate(HOSTILE)]


def case_hostile(api, kc):
    for i, (how, says) in enumerate(HOSTILE.items()):
        p = plugin("doctor", "--node", "n-%d" % i, kubeconfig=kc)
        sane = "Sanitizer" not in p.stderr and "runtime error" not in p.stderr
        ok(p.returncode == 1 and sane and says in p.stderr and "exec" in p.stderr,
           "doctor against a server that sends %s: exit 1, %s" % (how, "'%s'" % says if says else "an error"),
           (p.returncode, p.stdout[-300:], p.stderr[-600:]))


with_api({"pods": pods_h, "exec": {p["metadata"]["name"]: dict(exec_spec, hostile=h)
                                   for p, h in zip(pods_h, HOSTILE)}}, case_hostile)

# ---------------------------------------------------------------- the label: the agent writes, request reads


def case_agent_labels(api, kc):
    """The real agent (simulated GPU, a kubelet played by grpcio) labels its Node
    through the API server at start; the plugin then reads that label."""
    tmp2 = tempfile.mkdtemp(prefix="gs-kubectl-agent-")
    dp2, _ = fk.load_protos(tmp2)
    kdir = os.path.join(tmp2, "kubelet")
    os.makedirs(kdir)
    kub = fk.Kubelet(dp2, kdir)
    kub.start()
    interposer = os.path.join(tmp2, "libgpuslice.so")
    open(interposer, "w").close()
    log = open(os.path.join(tmp2, "agent.log"), "wb")
    agent = subprocess.Popen([GS, "agent", "--backend", "simulated", "--kubelet-dir", kdir,
                              "--state-root", os.path.join(tmp2, "state"), "--interposer-path", interposer,
                              "--pod-resources-socket", "", "--memory-unit", "512Mi",
                              "--kubeconfig", kc, "--node-name", "gpu-1"],
                             stdout=log, stderr=log, env=dict(ENV, NODE_NAME="not-this-one"))
    try:
        kub.wait_registrations(3)
        reqs = api.requests()
        body = [r for r in reqs if r.startswith("PATCH-BODY ")]
        want = {"metadata": {"labels": {"gpuslice.io/gpu-memory-unit": "512Mi",
                                        "gpuslice.io/backend": "simulated", "gpuslice.io/mode": "fractional"}}}
        ok("PATCH /api/v1/nodes/gpu-1" in reqs and len(body) == 1 and
           body[0].split(" ", 2)[1] == "application/merge-patch+json" and json.loads(body[0].split(" ", 2)[2]) == want,
           "the agent labels its own Node (node_name) with a merge patch: unit 512Mi, backend, mode", reqs)
        p = plugin("request", "3Gi", kubeconfig=kc)
        ok(p.returncode == 0 and "gpuslice.io/gpu-memory: 6  # 3 GiB" in p.stdout,
           "request reads the unit the agent published: 3Gi = 6 units of 512Mi", p.stdout + p.stderr)
    finally:
        agent.terminate()
        agent.wait(timeout=20)
        kub.stop()
        log.close()
    with open(os.path.join(tmp2, "agent.log")) as f:
        alog = f.read()
    ok("labelled node gpu-1" in alog, "the agent says it labelled the node", alog[-1500:])
    shutil.rmtree(tmp2, ignore_errors=True)


with_api({"nodes": [node("gpu-1"), node("gpu-2")], "patch_nodes": True}, case_agent_labels)


def case_agent_forbidden(api, kc):
    tmp2 = tempfile.mkdtemp(prefix="gs-kubectl-agent-")
    r = subprocess.run([GS, "agent", "--backend", "simulated", "--kubelet-dir", os.path.join(tmp2, "none"),
                        "--state-root", os.path.join(tmp2, "state"), "--kubeconfig", kc, "--node-name", "gpu-1",
                        "--pod-resources-socket", ""],
                       capture_output=True, text=True, timeout=30)
    ok("node labels not published" in r.stderr and "HTTP 405" in r.stderr,
       "a refused PATCH is a warning that names the answer; the agent goes on to its own checks", r.stderr[-1500:])
    shutil.rmtree(tmp2, ignore_errors=True)


with_api({"nodes": [node("gpu-1")]}, case_agent_forbidden)

# ---------------------------------------------------------------- the examples say their size in bytes

import yaml  # noqa: E402

EX = os.path.join(os.path.dirname(TESTS), "deploy", "examples")
BLOCK = re.compile(r"^(\s*)# (kubectl gpuslice request [^\n]*)\n\1limits:\n((?:\1  [^\n]*\n)+)", re.M)
for name in sorted(os.listdir(EX)):
    if not name.endswith(".yaml"):
        continue
    with open(os.path.join(EX, name)) as f:
        text = f.read()
    asks = sum(1 for doc in yaml.safe_load_all(text) if doc and doc.get("kind") == "Pod"
               for c in doc["spec"]["containers"]
               if "gpuslice.io/gpu-memory" in c.get("resources", {}).get("limits", {}))
    blocks = BLOCK.findall(text)
    ok(len(blocks) == asks, "%s: each of its %d memory requests says the command that writes it" % (name, asks),
       [b[1] for b in blocks])
    for _, cmd, body in blocks:
        args = cmd.split()[2:]  # "request" onwards
        p = plugin(*(args + ["--unit", "256Mi"]))
        want = p.stdout.split("  limits:\n", 1)[-1].splitlines()
        ok(p.returncode == 0 and [ln.strip() for ln in body.splitlines()] == [ln.strip() for ln in want],
           "%s: '%s' at 256Mi units prints exactly its limits, sizes in bytes as comments" % (name, cmd),
           body + "---\n" + p.stdout + p.stderr)

# docs/resources.md's worked examples name the command too.
with open(os.path.join(os.path.dirname(TESTS), "docs", "resources.md")) as f:
    doc = f.read()
cases = re.findall(r"\(kubectl gpuslice (request [^)]*)\)\n(?:resources:\n)?\s*limits: \{([^}]*)\}", doc)
for cmd, limits in cases:
    p = plugin(*(cmd.split() + ["--unit", "256Mi"]))
    got = dict(re.findall(r"^    (gpuslice\.io/[\w-]+): (\d+)", p.stdout, re.M))
    want = dict(re.findall(r"(gpuslice\.io/[\w-]+): (\d+)", limits))
    ok(p.returncode == 0 and got == want, "docs/resources.md: '%s' gives its limits {%s}" % (cmd, limits),
       p.stdout + p.stderr)
ok(len(cases) == 4, "docs/resources.md: its four worked requests name their command", cases)

# ---------------------------------------------------------------- the contract's names in deploy/

contract = open(os.path.join(os.path.dirname(TESTS), "src", "contract", "contract.h")).read()
names = dict(re.findall(r'#define (GS_K8S_\w+) "([^"]*)"', contract))
manifests = ""
for d, _, files in os.walk(os.path.join(os.path.dirname(TESTS), "deploy")):
    for f in files:
        if f.endswith((".yaml", ".yml")):
            manifests += open(os.path.join(d, f)).read()
sel_key, sel_val = names["GS_K8S_AGENT_SELECTOR"].split("=")
ok("namespace: %s" % names["GS_K8S_NAMESPACE"] in manifests and
   re.search(r"%s:\s*%s" % (re.escape(sel_key), re.escape(sel_val)), manifests) and
   re.search(r"- name: %s\b" % names["GS_K8S_AGENT_CONTAINER"], manifests) and
   re.search(r"mountPath: %s\s" % re.escape(names["GS_K8S_HOST_ROOT"]), manifests),
   "deploy/ has the namespace, the agent's label, container and host mount the plugin looks for", names)

shutil.rmtree(BIN, ignore_errors=True)
shutil.rmtree(HOME, ignore_errors=True)
sys.exit(tap.done())
