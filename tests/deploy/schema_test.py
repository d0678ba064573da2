"""Every kustomization in deploy/ renders with Debian's kubectl (1.20, the
oldest kustomize they are written for) and every object it gives is valid
for its kind: the Kubernetes OpenAPI definitions (k8s_schema.py) and the
Prometheus Operator kinds (monitoring_schema.py), checked by python3-jsonschema;
namespaced kinds carry the namespace, cluster-scoped ones none. A newer
kubectl, where one is installed, must render the same objects.
TAP output; skipped (77) without Debian's kubectl or jsonschema
(scripts/install-deps.sh installs both)."""
import copy
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402
import kustomize as kz  # noqa: E402

try:
    import jsonschema
    import k8s_schema
    import monitoring_schema
    import dra_schema
except ImportError as e:
    print("1..0 # SKIP %s (python3-jsonschema, python3-kubernetes)" % e)
    sys.exit(77)
kubectl = kz.require_kubectl()

tap = Tap()
ok = tap.ok
cache = {}


def validator(doc):
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key not in cache:
        written = {**monitoring_schema.SCHEMAS, **dra_schema.SCHEMAS}
        if key in written:
            # cluster-scoped: the DRA classes; namespaced: the operator's kinds
            cache[key] = (jsonschema.Draft7Validator(written[key]), key not in dra_schema.SCHEMAS)
        else:
            cache[key] = (jsonschema.Draft7Validator(k8s_schema.schema(*key)), k8s_schema.kind_info(*key)[1])
    return cache[key]


def problems(doc):
    """What is wrong with one object, as readable lines (empty when valid)."""
    try:
        v, namespaced = validator(doc)
    except ValueError as e:
        return [str(e)]
    out = ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(top)", e.message)
           for e in sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))]
    ns = doc.get("metadata", {}).get("namespace")
    if namespaced and not ns:
        out.append("namespaced kind without metadata.namespace")
    if not namespaced and ns:
        out.append("cluster-scoped kind with metadata.namespace %s" % ns)
    if not doc.get("metadata", {}).get("name"):
        out.append("no metadata.name")
    return out


rendered = {}
for rel in kz.OVERLAYS + [kz.MONITORING]:
    try:
        rendered[rel] = kz.render(rel, kubectl)
    except RuntimeError as e:
        ok(False, "deploy/%s renders with Debian's kubectl" % rel, e)
        continue
    kinds = sorted("%s/%s" % (d["kind"], d["metadata"]["name"]) for d in rendered[rel])
    bad = {"%s/%s" % (d["kind"], d["metadata"]["name"]): problems(d) for d in rendered[rel]}
    bad = {k: v for k, v in bad.items() if v}
    ok(rendered[rel] and not bad,
       "deploy/%s: %d objects, each valid for its kind (%s)" % (rel, len(rendered[rel]), ", ".join(kinds)), bad)

# The validator bites: each of these is refused, and says where.
ds = kz.find(rendered.get("overlays/k3s-dgpu", []), "DaemonSet", "gpuslice-agent")
if ds:
    def broken(change):
        d = copy.deepcopy(ds)
        change(d)
        return problems(d)
    cases = [
        ("a misspelt field", lambda d: d["spec"]["template"]["spec"]["containers"][0].update(securityContex={}),
         "securityContex"),
        ("a missing required field (spec.selector)", lambda d: d["spec"].pop("selector"), "selector"),
        ("a port as a string", lambda d: d["spec"]["template"]["spec"]["containers"][1]["ports"][0].update(
            containerPort="9478"), "containerPort"),
        ("a container without a name", lambda d: d["spec"]["template"]["spec"]["containers"][0].pop("name"),
         "name"),
        ("a namespace on a cluster-scoped kind",
         lambda d: d.update(kind="ClusterRole", apiVersion="rbac.authorization.k8s.io/v1") or d.pop("spec"),
         "cluster-scoped"),
    ]
    for what, change, word in cases:
        p = broken(change)
        ok(p and any(word in line for line in p), "the schema refuses %s" % what, p)
rule = kz.find(rendered.get(kz.MONITORING, []), "PrometheusRule")
if rule:
    d = copy.deepcopy(rule)
    d["spec"]["groups"][0]["rules"][0]["for"] = "two minutes"
    p = problems(d)
    ok(p and any("for" in line for line in p), "the PrometheusRule schema refuses a duration it cannot parse", p)
dc = kz.find(rendered.get("dra", []), "DeviceClass")
if dc:
    d = copy.deepcopy(dc)
    d["spec"]["selectors"][0] = {"cel": {"expresion": 'device.driver == "gpuslice.io"'}}
    p = problems(d)
    ok(p and any("expresion" in line or "expression" in line for line in p),
       "the DeviceClass schema refuses a selector with a misspelt CEL field", p)

# A newer kubectl (a cloud SDK's, say) on this machine renders the same objects:
# the kustomizations suit old and new kustomize alike. The ConfigMap's hash
# suffix differs between kustomize versions.
# (norm changes the objects: it runs after the checks above.)
newer = shutil.which("kubectl")
if newer and os.path.realpath(newer) != os.path.realpath(kubectl):
    v = subprocess.run([newer, "version", "--client"], capture_output=True, text=True).stdout.strip()

    def norm(docs):
        for d in docs:  # kustomize v2.0.3 leaves an empty annotations map on merged ConfigMaps
            if d["metadata"].get("annotations") == {}:
                del d["metadata"]["annotations"]
        text = repr(sorted((d["kind"], d["metadata"]["name"], repr(d)) for d in docs))
        return re.sub(r"gpuslice-agent-config-[a-z0-9]{10}", "gpuslice-agent-config-HASH", text)
    for rel, docs in sorted(rendered.items()):
        try:
            other = kz.render(rel, newer)
        except RuntimeError as e:
            other = []
            print("# %s" % e)
        ok(norm(other) == norm(docs), "deploy/%s: %s renders the same objects" % (rel, v.splitlines()[0][:60]))
else:
    ok(True, "a newer kubectl renders the same objects # skip only Debian's kubectl here")
sys.exit(tap.done())
