"""deploy/dra (the agent as a DRA driver) agrees with the code: rendered by
Debian's kubectl (tests/deploy/kustomize.py), the agent runs with dra on and
the kubelet's and the runtime's folders at the paths the agent's defaults
name (contract.h); the DeviceClass selects the driver the agent publishes;
the RBAC grants exactly the requests src/agent/dra.c makes; the examples'
claim templates ask only for the capacities the agent publishes, with
parameters of the kind and priorities it reads, and their Pods use the claims.
(tests/agent/dra_test.py runs the examples' claims through the real agent.)
TAP output; run by tests/run-tests.sh."""
import glob
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402
import kustomize as kz  # noqa: E402

kz.require_kubectl()

tap = Tap()
ok = tap.ok
DRIVER = kz.contract("GS_DRA_DRIVER_DEFAULT")
docs = kz.render("dra")
ds = kz.find(docs, "DaemonSet", "gpuslice-agent")
agent = kz.container(ds, "agent")
pod = ds["spec"]["template"]["spec"]
ok("--dra=on" in agent["command"], "the agent runs with dra on", agent["command"])

def define(name):
    """A contract.h #define, its string literals and macros joined as the compiler does."""
    with open(os.path.join(kz.SRC, "src", "contract", "contract.h")) as f:
        m = re.search(r"^#define %s (.*?)(?:/\*.*)?$" % name, f.read(), re.M)
    if not m:
        return None
    return "".join(t[1:-1] if t.startswith('"') else define(t) or ""
                   for t in re.findall(r'"[^"]*"|\w+', m.group(1)))


vols = {v["name"]: v for v in pod["volumes"]}
mounts = {m["mountPath"]: vols.get(m["name"], {}) for m in agent["volumeMounts"]}
for key in ("GS_KUBELET_REGISTRY_DIR_DEFAULT", "GS_KUBELET_DRA_DIR_DEFAULT", "GS_CDI_DIR_DEFAULT"):
    want = define(key)
    host = mounts.get(want, {}).get("hostPath", {}).get("path")
    ok(want and host == want and not [m for m in agent["volumeMounts"] if m["mountPath"] == want and
                                      m.get("readOnly")],
       "the agent mounts %s from the host at the same path, writable (%s)" % (want, key), mounts.keys())

dc = kz.find(docs, "DeviceClass", DRIVER)
exprs = [s["cel"]["expression"] for s in (dc or {}).get("spec", {}).get("selectors", [])]
ok(dc and dc["apiVersion"] == "resource.k8s.io/v1" and exprs == ['device.driver == "%s"' % DRIVER],
   "DeviceClass %s selects the devices of driver %s (the agent's dra_driver default)" % (DRIVER, DRIVER), dc)

# What dra.c asks: GETs of claims and of its ResourceSlice, then POST or PUT of it.
with open(os.path.join(kz.SRC, "src", "agent", "dra.c")) as f:
    src = f.read()
need = set()
for m in re.finditer(r'(?<!#define )RESOURCE_API\s*"(?:/namespaces/%s)?/(\w+)', src):
    need.add(("get", m.group(1)))
if re.search(r'gs_kube_send\([^;]*"POST"', src):
    need.add(("create", "resourceslices"))
if re.search(r'gs_kube_send\([^;]*"PUT"', src):
    need.add(("update", "resourceslices"))
role = kz.find(docs, "ClusterRole", "gpuslice-agent-dra")
granted = {(v, r) for rule in (role or {}).get("rules", []) for v in rule["verbs"] for r in rule["resources"]
           if rule["apiGroups"] == ["resource.k8s.io"]}
binding = kz.find(docs, "ClusterRoleBinding", "gpuslice-agent-dra")
ok(need == {("get", "resourceclaims"), ("get", "resourceslices"), ("create", "resourceslices"),
            ("update", "resourceslices")} and granted == need and
   binding["subjects"] == [{"kind": "ServiceAccount", "name": pod["serviceAccountName"],
                            "namespace": ds["metadata"]["namespace"]}],
   "RBAC: the agent's ServiceAccount may do what dra.c asks of resource.k8s.io, nothing more (%s)"
   % ", ".join("%s %s" % x for x in sorted(need)), (sorted(granted), sorted(need)))

caps = {kz.contract("GS_DRA_CAP_MEMORY"), kz.contract("GS_DRA_CAP_CORES")}
prios = {kz.contract("GS_DRA_PRIO_CRITICAL"), kz.contract("GS_DRA_PRIO_BEST_EFFORT")}
examples = sorted(glob.glob(os.path.join(kz.DEPLOY, "dra", "examples", "*.yaml")))
ok(len(examples) >= 2, "deploy/dra/examples has the worked examples", examples)
for path in examples:
    with open(path) as f:
        objs = [d for d in yaml.safe_load_all(f) if d]
    templates = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ResourceClaimTemplate"}
    good = bool(templates)
    for t in templates.values():
        dev = t["spec"]["spec"]["devices"]
        for r in dev["requests"]:
            ex = r["exactly"]
            good &= ex["deviceClassName"] == DRIVER and set(ex["capacity"]["requests"]) <= caps
        for c in dev.get("config", []):
            par = c["opaque"]["parameters"]
            good &= (c["opaque"]["driver"] == DRIVER and par["apiVersion"] == kz.contract("GS_DRA_PARAMS_API") and
                     par["kind"] == kz.contract("GS_DRA_PARAMS_KIND") and par["priority"] in prios)
    specs = [o["spec"] for o in objs if o["kind"] == "Pod"] + \
        [o["spec"]["template"]["spec"] for o in objs if o["kind"] == "Job"]
    for s in specs:
        names = {c["name"]: c.get("resourceClaimTemplateName") for c in s.get("resourceClaims", [])}
        good &= bool(names) and all(n in templates for n in names.values())
        good &= all(c["name"] in names for ct in s["containers"] for c in ct["resources"].get("claims", []))
        good &= all(ct["resources"].get("claims") for ct in s["containers"])
    ok(good and specs, "examples/%s: claims of class %s asking only %s, parameters the agent reads; every "
       "container uses its Pod's claim" % (os.path.basename(path), DRIVER, " and ".join(sorted(caps))),
       templates)
sys.exit(tap.done())
