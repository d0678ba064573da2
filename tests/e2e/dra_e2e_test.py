#!/usr/bin/python3
"""DRA mode end to end with a real container engine: tenant containers started
from the CDI devices the agent's NodePrepareResources answer names, as the
kubelet hands them to the runtime (CRI CDIDevices) and the runtime applies
the specs it finds in /var/run/cdi. The agent runs on the host with dra = on
and device_list_strategy = cdi-cri; the kubelet is grpcio
(tests/agent/fakekubelet.py), the API server tests/agent/dra_apiserver.py,
the GPU the simulated one, handed over by a CDI spec of kind nvidia.com/gpu
as `nvidia-ctk cdi generate` would. Two claims share the GPU; each tenant sees
its own cap and is refused at it; after Unprepare the device is gone.

Needs podman and root (as tests/e2e/node_e2e.py, whose engine settings and
base image it uses); TAP output, exit 77 when either is missing."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "agent"))
sys.path.insert(0, TESTS)
sys.path.insert(0, HERE)
import fakekubelet as fk  # noqa: E402
from tap import Tap  # noqa: E402

if os.geteuid() != 0 or not shutil.which("podman"):
    print("1..0 # SKIP needs root and podman (scripts/install-deps.sh)")
    sys.exit(77)
if os.environ.get("SAN"):  # a sanitizer-built interposer cannot load in a stock image
    print("1..0 # SKIP runs in the plain test pass")
    sys.exit(77)

import node_e2e as ne  # noqa: E402
import dra_test as drt  # noqa: E402

tap = Tap()
GiB = 1 << 30
NODE = drt.NODE


def main():
    tmp = tempfile.mkdtemp(prefix="gs-dra-e2e-")
    e = ne.Engine(tmp)
    e.base_image(tmp)
    reg, v1, _ = fk.load_dra_protos(tmp)
    run_id = uuid.uuid4().hex[:8]
    uids = ["%s-aaaa-4aaa-8aaa-%012d" % (run_id, i) for i in range(2)]
    claims = [drt.claim("model-%d" % i, u, [drt.result("gpu-0", mem, cores, share="s%d" % i)],
                        config=drt.params(prio))
              for i, (u, mem, cores, prio) in enumerate([(uids[0], "1Gi", "60", "critical"),
                                                          (uids[1], "2Gi", "40", "best-effort")])]
    api = drt.DraApi({"nodes": [], "resourceclaims": claims})
    cdi = ne.CDI_DIR
    os.makedirs(cdi, exist_ok=True)
    gpu_spec = os.path.join(cdi, "gpuslice-dra-e2e-%s.json" % run_id)
    with open(gpu_spec, "w") as f:  # the simulated GPU's driver, as NVIDIA's spec hands the real one
        json.dump({"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
                   "devices": [{"name": ne.SIM_GPU, "containerEdits": {"env": ["GS_E2E_GPU=" + ne.SIM_GPU]}}],
                   "containerEdits": {"mounts": [{
                       "hostPath": os.path.join(fk.BUILD, "sim", "libcuda.so.1"),
                       "containerPath": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "options": ["ro", "bind"]}]}},
                  f)
    registry, plugins, state = (os.path.join(tmp, d) for d in ("registry", "plugins", "state"))
    os.makedirs(registry)
    os.makedirs(plugins)
    env = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "NODE_NAME")}
    agent = fk.Agent(tmp, "agent", [
        "--dra", "on", "--backend", "simulated", "--plugins-registry-dir", registry, "--plugins-dir", plugins,
        "--cdi-dir", cdi, "--state-root", state, "--interposer-path", os.path.join(fk.BUILD, "libgpuslice.so"),
        "--device-list-strategy", "cdi-cri", "--kubeconfig", api.kubeconfig(), "--node-name", NODE,
        "--pod-resources-socket", "", "--node-labels", "off"], env=env).start()
    sock = os.path.join(plugins, drt.DRIVER, "dra.sock")
    names = []
    try:
        tap.ok(fk.wait_for(lambda: os.path.exists(sock)), "the agent serves DRAPlugin", agent.tail())
        r = fk.unary(drt.V1, sock, "NodePrepareResources", v1.NodePrepareResourcesRequest(claims=[
            v1.Claim(namespace="serving", uid=u, name="model-%d" % i) for i, u in enumerate(uids)]),
            v1.NodePrepareResourcesResponse)
        ids = {u: [i for d in r.claims[u].devices for i in d.cdi_device_ids] for u in uids}
        tap.ok(all(ids[u] == ["gpuslice.io/slice=dra-%s-0" % u, "nvidia.com/gpu=" + ne.SIM_GPU] for u in uids),
               "each claim's answer: its slice's CDI device and the GPU's (device_list_strategy cdi-cri)", r)
        demo = os.path.join(fk.BUILD, "gpuslice-demo")

        def tenant(i, cmd):
            """A container as the runtime makes it for a Pod using claim i: the CDI devices, nothing else."""
            name = "gs-dra-e2e-%s-%d-%d" % (run_id, i, len(names))
            names.append(name)
            dev = [a for d in ids[uids[i]] for a in ("--device", d)]
            return e("run", "--name", name, "--network", "none", "-v", demo + ":/opt/demo:ro", *dev, ne.BASE,
                     *cmd, check=False, timeout=300)

        pa = tenant(0, ["sh", "-c", "cat /run/gpuslice/limits; echo SLICE=$GPUSLICE_SLICE_ID; "
                                    "cat /etc/ld.so.preload; /opt/demo 512"])
        out = pa.stdout + pa.stderr
        tap.ok(pa.returncode == 0 and "priority = critical" in out and "SLICE=dra-%s-0" % uids[0] in out and
               "/usr/local/lib/gpuslice/libgpuslice.so" in out,
               "the critical claim's container: its limits (critical), its slice id, the preload", out[-1500:])
        tap.ok("1.00 GiB total" in out and "CUDA_ERROR_OUT_OF_MEMORY" in out,
               "and its CUDA program sees 1 GiB and gets a clean out-of-memory at the cap", out[-1500:])
        pb = tenant(1, ["/opt/demo", "1024", "2"])
        out = pb.stdout + pb.stderr
        tap.ok(pb.returncode == 0 and "2.00 GiB total" in out and "OUT_OF_MEMORY" not in out,
               "the second claim's container, on the same GPU, sees its 2 GiB and is untouched", out[-1500:])
        pc = tenant(1, ["sh", "-c", "echo x > /run/gpuslice/limits"])
        tap.ok(pc.returncode != 0 and "Read-only file system" in pc.stdout + pc.stderr,
               "the tenant cannot write its limits (read-only mount)", pc.stdout + pc.stderr)
        u = fk.unary(drt.V1, sock, "NodeUnprepareResources", v1.NodeUnprepareResourcesRequest(claims=[
            v1.Claim(namespace="serving", uid=x, name="x") for x in uids]), v1.NodeUnprepareResourcesResponse)
        pd = tenant(0, ["true"])
        tap.ok(all(not u.claims[x].error for x in uids) and pd.returncode != 0 and
               "gpuslice.io/slice=dra-%s-0" % uids[0] in pd.stdout + pd.stderr,
               "after NodeUnprepareResources the runtime no longer knows the claim's device",
               pd.stdout[-500:] + pd.stderr[-800:])
    finally:
        for n in names:
            e("rm", "-f", n, check=False)
        agent.stop()
        api.close()
        os.unlink(gpu_spec)
        for u in uids:  # the agent removes them at Unprepare; a failed run may leave them
            p = os.path.join(cdi, "gpuslice.io-slice_dra-%s-0.json" % u)
            if os.path.exists(p):
                os.unlink(p)
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
