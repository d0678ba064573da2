"""deploy/ agrees with the code, overlay by overlay (each rendered by Debian's
kubectl, tests/deploy/kustomize.py): the names the doctor's fixes use, the
agent's settings and default paths, the contract's label and port, the RBAC
the doctor's requests need and no more, the security context, the probes,
what each overlay is for, and the examples' resources.
TAP output; run by tests/run-tests.sh with GS_BUILD_DIR set."""
import glob
import os
import re
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402
import kustomize as kz  # noqa: E402

SRC = kz.SRC
BUILD = os.environ.get("GS_BUILD_DIR", "build")
kz.require_kubectl()

tap = Tap()
ok = tap.ok

LABEL_GPU = kz.contract("GS_LABEL_GPU")
PORT = kz.contract("GS_MONITOR_PORT")
with open(os.path.join(SRC, "deploy", "README.md")) as f:
    deploy_readme = f.read()


def help_settings(verb):
    text = subprocess.run([os.path.join(BUILD, "gpuslice"), verb, "--help"], capture_output=True,
                          text=True).stdout
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if line.startswith("  ") and parts and "(default:" in line:
            out[parts[0]] = line.rsplit("(default:", 1)[1].rstrip(")").strip()
    return out


settings = help_settings("agent")
ok(len(settings) > 20, "gpuslice agent --help lists its settings", settings)


def agent_settings(cm, ctr):
    """The agent's effective settings: defaults, the ConfigMap's agent.conf, then its flags."""
    conf = dict(settings)
    for line in cm["data"]["agent.conf"].splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            k, v = [x.strip() for x in line.split("=", 1)]
            conf[k] = v
    flags = {}
    for a in ctr["command"][2:]:
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
            flags[k.replace("-", "_")] = v
    conf.update(flags)
    return conf, flags


def rbac_needed():
    """(verb, group, resource) of every request the Pod's programs make with its
    ServiceAccount: gs_kube_list("/api/v1/<res>") and gs_kube_patch of a path built
    from "/api/v1/<res>/%s" in src/ (the kubectl plugin, src/kubectl, acts with its
    user's credentials, not the Pod's)."""
    need = set()

    def res(path):
        parts = path.strip("/").split("/")
        return ("" if parts[0] == "api" else parts[1]), parts[2 if parts[0] == "api" else 3]
    for path in glob.glob(os.path.join(SRC, "src", "*", "*.c")):
        if os.path.basename(os.path.dirname(path)) in ("kube", "kubectl"):
            continue
        with open(path) as f:
            text = f.read()
        for m in re.finditer(r'gs_kube_list\([^,]+,\s*"([^"]+)"', text):
            need.add(("list",) + res(m.group(1)))
        if "gs_kube_patch(" in text:
            for m in re.finditer(r'"(/apis?/[^"%]+)/%s"', text):
                need.add(("patch",) + res(m.group(1)))
    return need


def check_common(name, docs):
    ds = kz.find(docs, "DaemonSet", "gpuslice-agent")
    cm = kz.find(docs, "ConfigMap", "gpuslice-agent-config")
    ok(ds and ds["metadata"]["namespace"] == "gpuslice-system" and cm,
       "%s: DaemonSet gpuslice-agent in gpuslice-system (the names the doctor's fixes give), its ConfigMap" % name)
    if not (ds and cm):
        return None
    pod = ds["spec"]["template"]["spec"]
    labels = ds["spec"]["template"]["metadata"]["labels"]
    ok(labels.get("app.kubernetes.io/name") == "gpuslice-agent" and
       ds["spec"]["selector"]["matchLabels"].items() <= labels.items(),
       "%s: Pods labelled app.kubernetes.io/name=gpuslice-agent, the selector matches them" % name, labels)
    ok(pod.get("nodeSelector", {}).get(LABEL_GPU) == "true" and
       "kubectl label node <node> %s=true" % LABEL_GPU in deploy_readme,
       "%s: the DaemonSet selects nodes by the contract's GPU label, the one deploy/README.md has the operator set"
       % name, pod.get("nodeSelector"))
    vol_cm = [v for v in pod["volumes"] if "configMap" in v]
    ok(vol_cm and vol_cm[0]["configMap"]["name"] == cm["metadata"]["name"],
       "%s: the config volume names the rendered ConfigMap (%s)" % (name, cm["metadata"]["name"]))
    agent, monitor = kz.container(ds, "agent"), kz.container(ds, "monitor")
    conf, flags = agent_settings(cm, agent)
    file_keys = set()
    for line in cm["data"]["agent.conf"].splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            file_keys.add(line.split("=", 1)[0].strip())
    unknown = sorted((file_keys | set(flags)) - set(settings))
    ok(not unknown and agent["command"][:4] == ["gpuslice", "agent", "--config", "/etc/gpuslice/agent.conf"],
       "%s: every agent.conf key and agent flag is an agent setting" % name, (unknown, agent["command"]))

    mounts = {m["mountPath"]: m for m in agent["volumeMounts"]}
    vols = {v["name"]: v for v in pod["volumes"]}

    def host_at(path, ms=mounts):
        m = ms.get(path)
        return m and vols[m["name"]].get("hostPath", {}).get("path") == path
    ok(host_at(conf["kubelet_dir"]), "%s: the kubelet's device-plugin directory is mounted at the same path" % name,
       conf["kubelet_dir"])
    pr = os.path.dirname(conf["pod_resources_socket"])
    ok(host_at(pr), "%s: the PodResources socket's directory is mounted at the same path" % name, pr)
    state = conf["state_root"]
    covering = [p for p in mounts if state.startswith(p.rstrip("/") + "/") or state == p]
    ok(covering and host_at(covering[0]) and not mounts[covering[0]].get("readOnly"),
       "%s: the state root lives on a writable hostPath at the same path (Allocate hands host paths to the kubelet)"
       % name, state)
    init = pod["initContainers"][0]
    host_lib = vols[init["volumeMounts"][0]["name"]]["hostPath"]["path"]
    ok(host_lib == os.path.dirname(conf["interposer_path"]) and "libgpuslice.so" in " ".join(init["command"]),
       "%s: the init container installs libgpuslice.so where interposer_path points" % name, host_lib)
    ok(conf.get("root") == "/host" and mounts.get("/host", {}).get("readOnly") and
       vols[mounts["/host"]["name"]]["hostPath"]["path"] == "/",
       "%s: the host's / is mounted read-only where the agent's root setting points (documented: the doctor's "
       "node checks)" % name)

    # The monitor: the contract's port everywhere, the agent's state read-only.
    mm = {m["mountPath"]: m for m in monitor["volumeMounts"]}
    cport = monitor["ports"][0]
    svc = kz.find(docs, "Service", "gpuslice-monitor")
    sport = svc["spec"]["ports"][0] if svc else {}
    port_name = kz.contract("GS_K8S_MONITOR_PORT_NAME") or cport["name"]
    ok(monitor["command"][:2] == ["gpuslice", "monitor"] and "--listen" in monitor["command"] and
       monitor["command"][monitor["command"].index("--listen") + 1] == ":%d" % PORT and
       cport["containerPort"] == PORT and cport["name"] == port_name and sport.get("port") == PORT and
       sport.get("targetPort") == cport["name"] and PORT != 9400,
       "%s: the monitor listens on GS_MONITOR_PORT %d (not dcgm-exporter's 9400); container port, Service agree"
       % (name, PORT), (monitor["command"], cport, sport))
    ok(svc and svc["spec"]["selector"].items() <= labels.items(), "%s: the Service selects the DaemonSet's Pods" % name)
    margs = monitor["command"]
    ok(margs[margs.index("--state-root") + 1] == state and any(
        state.startswith(p.rstrip("/") + "/") and m.get("readOnly") and host_at(p, mm) for p, m in mm.items()) and
       margs[margs.index("--pod-resources-socket") + 1] == conf["pod_resources_socket"] and host_at(pr, mm),
       "%s: the monitor reads the agent's state root (read-only) and the same PodResources socket" % name, margs)

    # Security and lifecycle.
    for c in pod["initContainers"] + pod["containers"]:
        sc = c.get("securityContext", {})
        ok(sc.get("capabilities", {}).get("drop") == ["ALL"] and not sc.get("capabilities", {}).get("add") and
           sc.get("allowPrivilegeEscalation") is False and sc.get("readOnlyRootFilesystem") is True and
           not sc.get("privileged"),
           "%s: %s drops every capability, adds none, no privilege escalation, read-only root filesystem"
           % (name, c["name"]), sc)
        ok(c.get("resources", {}).get("requests", {}).get("memory") and
           c.get("resources", {}).get("limits", {}).get("memory"),
           "%s: %s has memory requests and limits" % (name, c["name"]), c.get("resources"))
    ok(pod.get("securityContext", {}).get("seccompProfile", {}).get("type") == "RuntimeDefault" and
       not pod.get("hostNetwork") and not pod.get("hostIPC"),
       "%s: the Pod runs under the runtime's seccomp profile, in its own network and IPC namespaces" % name)
    ok(all(c.get("readinessProbe") and c.get("livenessProbe") for c in pod["containers"]) and
       monitor["readinessProbe"]["httpGet"]["port"] == cport["name"] and
       "_agent/node" in " ".join(agent["readinessProbe"]["exec"]["command"]),
       "%s: readiness and liveness probes: the monitor's HTTP, the agent's sockets from its node file" % name)
    rbac_ok(name, docs)
    return ds, cm, conf, flags


def rbac_ok(name, docs):
    sa = kz.find(docs, "ServiceAccount", "gpuslice-agent")
    ds = kz.find(docs, "DaemonSet", "gpuslice-agent")
    subject = [{"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": sa["metadata"]["namespace"]}]
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterRole"}
    granted = set()
    bound = True
    for b in (d for d in docs if d["kind"] == "ClusterRoleBinding"):
        bound = bound and b["subjects"] == subject and b["roleRef"]["name"] in roles
        for r in roles.get(b["roleRef"]["name"], {}).get("rules", []):
            granted |= {(v, g, x) for v in r["verbs"] for g in r["apiGroups"] for x in r["resources"]}
    need = rbac_needed()
    ok(need and granted == need and not [d for d in docs if d["kind"] in ("Role", "RoleBinding")],
       "%s: the ServiceAccount may do exactly what the Pod's programs ask the API server, nothing else (%s)"
       % (name, ", ".join("%s %s" % (v, x) for v, g, x in sorted(need))), (sorted(granted), sorted(need)))
    ok(bound and ds["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"],
       "%s: every binding is to the DaemonSet's ServiceAccount" % name)


rendered = {rel: kz.render(rel) for rel in kz.OVERLAYS}

r = check_common("k3s-dgpu", rendered["overlays/k3s-dgpu"])
if r:
    ds, cm, conf, flags = r
    pod = ds["spec"]["template"]["spec"]
    rc = kz.find(rendered["overlays/k3s-dgpu"], "RuntimeClass", "nvidia")
    ok(conf["backend"] == "nvml" and pod.get("runtimeClassName") == "nvidia" and rc and rc["handler"] == "nvidia"
       and pod.get("hostPID") is True and conf["device_list_strategy"] == "envvar",
       "k3s-dgpu: NVML backend, the nvidia RuntimeClass (handler nvidia) for the Pod, the host's pids for the audit")

r = check_common("jetson", rendered["overlays/jetson"])
if r:
    ds, cm, conf, flags = r
    pod = ds["spec"]["template"]["spec"]
    mon = kz.container(ds, "monitor")
    ok(conf["backend"] == "tegra" and pod["nodeSelector"].get("kubernetes.io/arch") == "arm64" and
       "--audit=off" in mon["command"] and pod.get("hostPID") is False and pod.get("runtimeClassName") == "nvidia",
       "jetson: tegra backend, arm64 nodes, no NVML audit and so no host pids, the nvidia RuntimeClass")

r = check_common("replica", rendered["overlays/replica"])
if r:
    ds, cm, conf, flags = r
    sh = yaml.safe_load(cm["data"].get("sharing.yaml", "{}")) or {}
    res = sh.get("sharing", {}).get("timeSlicing", {}).get("resources", [])
    ok(sh.get("version") == "v1" and res and all(isinstance(x.get("replicas"), int) and x["replicas"] > 1 and
                                                 x.get("name") == kz.contract("GS_RES_NVIDIA_NAME") for x in res),
       "replica: NVIDIA's time-slicing config (version v1, nvidia.com/gpu, integer replicas) in the ConfigMap", sh)
    ok(conf.get("sharing_config") == "/etc/gpuslice/sharing.yaml" and "agent.conf" in cm["data"],
       "replica: the agent reads it from the mounted ConfigMap, beside agent.conf", conf.get("sharing_config"))

r = check_common("cdi", rendered["overlays/cdi"])
if r:
    ds, cm, conf, flags = r
    pod = ds["spec"]["template"]["spec"]
    ann = ds["spec"]["template"]["metadata"].get("annotations", {})
    ok("runtimeClassName" not in pod and not kz.find(rendered["overlays/cdi"], "RuntimeClass") and
       conf["device_list_strategy"] == "cdi-cri" and
       any(k.startswith("cdi.k8s.io/") and v.startswith(conf["cdi_kind"] + "=") for k, v in ann.items()),
       "cdi: no RuntimeClass, CDI device names in Allocate, the agent's own GPU through a CDI annotation",
       (pod.get("runtimeClassName"), ann, conf["device_list_strategy"]))

# The monitoring objects scrape that Service and alert on exported names.
mon_docs = kz.render(kz.MONITORING)
sm = kz.find(mon_docs, "ServiceMonitor")
svc = kz.find(rendered["overlays/k3s-dgpu"], "Service", "gpuslice-monitor")
ok(sm and svc and sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items() and
   sm["spec"]["endpoints"][0]["port"] == svc["spec"]["ports"][0]["name"] and
   sm["spec"]["namespaceSelector"]["matchNames"] == [svc["metadata"]["namespace"]],
   "monitoring: the ServiceMonitor selects the monitor's Service and its named port")
ok(sm and sm["spec"]["endpoints"][0].get("honorLabels") is True,
   "monitoring: the ServiceMonitor keeps the tenant's namespace, pod and container labels (honorLabels)")

ours = {kz.contract(n) for n in ("GS_RES_MEMORY_NAME", "GS_RES_COMPUTE_NAME", "GS_RES_REALTIME_NAME",
                                 "GS_RES_NVIDIA_NAME")}
for path in sorted(glob.glob(os.path.join(SRC, "deploy", "examples", "*.yaml"))):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    pods = [d for d in docs if d["kind"] == "Pod"]
    used = set()
    for p in pods:
        for c in p["spec"]["containers"]:
            used |= set(c.get("resources", {}).get("limits", {}))
    ok(pods and used and used <= ours and all(p["spec"].get("runtimeClassName") == "nvidia" for p in pods),
       "examples/%s: Pods ask only for resources the agent advertises, with the nvidia RuntimeClass"
       % os.path.basename(path), used)

# Every deploy/ path the docs name exists.
named = set()
for doc in ["README.md", "deploy/README.md"] + glob.glob(os.path.join(SRC, "docs", "*.md")):
    with open(os.path.join(SRC, doc)) as f:
        named |= set(re.findall(r"(?<![\w/.])deploy/[A-Za-z0-9_./-]*[A-Za-z0-9_]", f.read()))
missing = sorted(p for p in named if not os.path.exists(os.path.join(SRC, p)))
ok(named and not missing, "every deploy/ path README.md, deploy/README.md and docs/ name exists", missing)
sys.exit(tap.done())
