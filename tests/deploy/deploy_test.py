"""deploy/ manifests agree with the code: names the doctor's fixes use, the
agent's settings and default paths, the resources the agent advertises.
TAP output; run by tests/run-tests.sh with GS_BUILD_DIR set."""
import os
import subprocess
import sys

import yaml

SRC = os.environ.get("GS_SRC_DIR", ".")
BUILD = os.environ.get("GS_BUILD_DIR", "build")


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

tap = Tap()
ok = tap.ok


def load(rel):
    with open(os.path.join(SRC, "deploy", rel)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


agent = load("gpuslice-agent.yaml")
by_kind = {d["kind"]: d for d in agent}
ds, cm = by_kind.get("DaemonSet"), by_kind.get("ConfigMap")
ok(ds and ds["metadata"]["name"] == "gpuslice-agent" and ds["metadata"]["namespace"] == "gpuslice-system",
   "DaemonSet gpuslice-agent in gpuslice-system (the names the doctor's fixes give)", ds and ds["metadata"])
labels = ds["spec"]["template"]["metadata"]["labels"]
ok(labels.get("app.kubernetes.io/name") == "gpuslice-agent" and
   ds["spec"]["selector"]["matchLabels"] == labels,
   "pods labelled app.kubernetes.io/name=gpuslice-agent, selector matches", labels)

# The node label the operator sets and the DaemonSet selects on (src/contract/contract.h).
with open(os.path.join(SRC, "src", "contract", "contract.h")) as f:
    label_gpu = next(line.split('"')[1] for line in f if line.startswith("#define GS_LABEL_GPU "))
with open(os.path.join(SRC, "deploy", "README.md")) as f:
    deploy_readme = f.read()
ok(ds["spec"]["template"]["spec"].get("nodeSelector") == {label_gpu: "true"} and
   "kubectl label node <node> %s=true" % label_gpu in deploy_readme,
   "the DaemonSet selects nodes by the contract's GPU label, the one deploy/README.md has the operator set",
   (label_gpu, ds["spec"]["template"]["spec"].get("nodeSelector")))

help_text = subprocess.run([os.path.join(BUILD, "gpuslice"), "agent", "--help"],
                           capture_output=True, text=True).stdout
settings = {}
for line in help_text.splitlines():
    parts = line.split()
    if line.startswith("  ") and parts and "(default:" in line:
        settings[parts[0]] = line.rsplit("(default:", 1)[1].rstrip(")").strip()
ok(len(settings) > 20, "gpuslice agent --help lists its settings", help_text[:500])

conf = {}
for line in cm["data"]["agent.conf"].splitlines():
    line = line.split("#", 1)[0].strip()
    if line:
        k, v = [x.strip() for x in line.split("=", 1)]
        conf[k] = v
unknown = sorted(set(conf) - set(settings))
ok(not unknown, "every key in the ConfigMap's agent.conf is an agent setting", unknown)

ctr = ds["spec"]["template"]["spec"]["containers"][0]
mounts = {m["mountPath"]: m for m in ctr["volumeMounts"]}
vols = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
kubelet_dir = conf.get("kubelet_dir", settings.get("kubelet_dir"))
ok(kubelet_dir in mounts and vols[mounts[kubelet_dir]["name"]]["hostPath"]["path"] == kubelet_dir,
   "the kubelet's device-plugin directory is mounted at the same path", kubelet_dir)
pr = os.path.dirname(conf.get("pod_resources_socket", settings.get("pod_resources_socket")))
ok(pr in mounts and vols[mounts[pr]["name"]]["hostPath"]["path"] == pr,
   "the PodResources socket's directory is mounted at the same path", pr)
state = conf.get("state_root", settings.get("state_root"))
covering = [p for p in mounts if state.startswith(p.rstrip("/") + "/") or state == p]
ok(covering and vols[mounts[covering[0]]["name"]]["hostPath"]["path"] == covering[0],
   "the state root lives on a hostPath at the same path (Allocate hands host paths to the kubelet)", state)
lib_dir = os.path.dirname(conf.get("interposer_path", settings.get("interposer_path")))
init = ds["spec"]["template"]["spec"]["initContainers"][0]
host_lib = vols[init["volumeMounts"][0]["name"]]["hostPath"]["path"]
ok(host_lib == lib_dir and "libgpuslice.so" in " ".join(init["command"]),
   "the init container installs libgpuslice.so where interposer_path points", (host_lib, lib_dir))
ok(conf.get("root") == "/host" and "/host" in mounts and mounts["/host"].get("readOnly"),
   "the host root is mounted read-only where the agent's root setting points")

ours = {"gpuslice.io/gpu-memory", "gpuslice.io/gpu-compute", "gpuslice.io/realtime", "nvidia.com/gpu"}
for name in sorted(os.listdir(os.path.join(SRC, "deploy", "examples"))):
    docs = load(os.path.join("examples", name))
    pods = [d for d in docs if d["kind"] == "Pod"]
    used = set()
    for p in pods:
        for c in p["spec"]["containers"]:
            used |= set(c.get("resources", {}).get("limits", {}))
    ok(pods and used and used <= ours and all(p["spec"].get("runtimeClassName") == "nvidia" for p in pods),
       f"examples/{name}: Pods ask only for resources the agent advertises, with the nvidia RuntimeClass",
       used)
    for d in docs:
        if d["kind"] == "ConfigMap" and "sharing.yaml" in d["data"]:
            sh = yaml.safe_load(d["data"]["sharing.yaml"])
            res = sh["sharing"]["timeSlicing"]["resources"]
            ok(sh["version"] == "v1" and all(isinstance(r["replicas"], int) for r in res),
               f"examples/{name}: NVIDIA sharing config (version v1, integer replicas)", sh)

rc = load("runtimeclass.yaml")[0]
ok(rc["metadata"]["name"] == "nvidia" and rc["handler"] == "nvidia", "RuntimeClass nvidia -> handler nvidia", rc)
sys.exit(tap.done())
