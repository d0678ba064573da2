"""deploy/'s kustomizations rendered the way an operator's `kubectl apply -k`
renders them, by Debian's kubectl (kubernetes-client 1.20, kustomize v2.0.3:
the oldest the kustomizations are written for). Shared by tests/deploy and
tests/e2e."""
import os
import subprocess
import sys

import yaml

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEPLOY = os.path.join(SRC, "deploy")
# Every kustomization an operator applies; deploy/base and deploy/runtimeclass
# only through the overlays.
OVERLAYS = ["overlays/k3s-dgpu", "overlays/jetson", "overlays/replica", "overlays/cdi", "dra"]
MONITORING = "monitoring"
# Where scripts/install-deps.sh unpacks Debian's kubectl when another package
# owns /usr/bin/kubectl.
UNPACKED = "/usr/local/lib/gpuslice-deps/kubernetes-client/usr/bin/kubectl"


def debian_kubectl():
    """Path of Debian's kubectl, or None: $GS_KUBECTL, the installed package, the unpacked one."""
    if os.environ.get("GS_KUBECTL"):
        return os.environ["GS_KUBECTL"]
    p = subprocess.run(["dpkg-query", "-S", "/usr/bin/kubectl"], capture_output=True, text=True)
    if p.returncode == 0 and p.stdout.split(":")[0] == "kubernetes-client":
        return "/usr/bin/kubectl"
    return UNPACKED if os.access(UNPACKED, os.X_OK) else None


def require_kubectl():
    """Debian's kubectl (debian_kubectl), or the TAP skip line and exit 77 for a test
    that cannot run without it."""
    kubectl = debian_kubectl()
    if not kubectl:
        print("1..0 # SKIP Debian's kubectl (kubernetes-client) not installed: scripts/install-deps.sh")
        sys.exit(77)
    return kubectl


def render(rel, kubectl=None):
    """The objects `kubectl kustomize deploy/<rel>` prints."""
    kubectl = kubectl or debian_kubectl()
    p = subprocess.run([kubectl, "kustomize", os.path.join(DEPLOY, rel)], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        raise RuntimeError("kubectl kustomize deploy/%s failed: %s" % (rel, p.stderr.strip()))
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def find(docs, kind, name=None):
    for d in docs:
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name or
                                  d["metadata"]["name"].startswith(name + "-")):
            return d
    return None


def container(ds, name):
    return next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def contract(name):
    """A #define of src/contract/contract.h: its string or number, None when absent."""
    with open(os.path.join(SRC, "src", "contract", "contract.h")) as f:
        for line in f:
            parts = line.split(None, 2)
            if len(parts) == 3 and parts[0] == "#define" and parts[1] == name:
                v = parts[2].split("/*")[0].strip()
                return v.strip('"') if v.startswith('"') else int(v)
    return None
