#!/usr/bin/python3
"""gpuslice agent against a kubelet played by real gRPC peers (grpcio).

Covers: registration (GetDevicePluginOptions called back inside Register),
ListAndWatch (initial list, update on health change), Allocate for fractional
and replica resources, one slice per container across resources, realtime,
GetPreferredAllocation packing, multi-GPU refusal, unknown / duplicate IDs,
empty, huge and garbage requests (clear gRPC errors, agent stays up), kubelet
restart (sockets removed and kubelet.sock re-created), PodResources reclaim,
CDI strategies, and SIGTERM. Run with /usr/bin/python3 (Debian's grpcio)."""
import os
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakekubelet as fk  # noqa: E402
from fakekubelet import Agent, read_limits  # noqa: E402,F401

import grpc  # noqa: E402

tap = fk.Tap()
MiB = 1 << 20
GiB = 1 << 30


def kubelet_restart_clears(kdir):
    """A restarting kubelet deletes every socket in its device-plugins folder.
    The agent serves again as soon as it sees one of its sockets go, so a
    socket may be gone (and back) by the time we reach it."""
    for f in os.listdir(kdir):
        try:
            os.unlink(os.path.join(kdir, f))
        except FileNotFoundError:
            pass

def envs(resp):
    return dict(resp.container_responses[0].envs)


def mounts(resp):
    return {m.container_path: (m.host_path, m.read_only) for m in resp.container_responses[0].mounts}


def slack(bound_s):
    """A time bound, half again as long under TSan (SAN=thread), which slows the agent
    and gRPC's threads: the properties timed here (event-driven re-registration, leaving
    a held call) hold either way, only the margin changes."""
    return bound_s * 1.5 if "thread" in os.environ.get("SAN", "") else bound_s


def wait_for(pred, timeout=5.0, step=0.05):
    return fk.wait_for(pred, timeout, step)


def next_list(q, timeout=5):
    try:
        return q.get(timeout=timeout)
    except Exception:
        return None


def rpc_code(fn):
    try:
        fn()
        return None, ""
    except grpc.RpcError as e:
        return e.code(), e.details()


def fractional(tmp, dp, pr):
    kdir = os.path.join(tmp, "dp")
    os.makedirs(kdir)
    state = os.path.join(tmp, "state")
    health = os.path.join(tmp, "health")
    open(health, "w").close()
    interposer = os.path.join(tmp, "libgpuslice.so")
    open(interposer, "w").close()
    sim = os.path.join(tmp, "sim.conf")
    with open(sim, "w") as f:
        f.write("gpus = 2\nmemory = 16Gi\nhealth_file = %s\n" % health)
    podres_sock = os.path.join(tmp, "podres.sock")
    podres = fk.PodResources(pr, podres_sock)

    kub = fk.Kubelet(dp, kdir)
    kub.start()
    agent = Agent(tmp, "agent", ["--backend", "simulated", "--sim-config", sim, "--kubelet-dir", kdir,
                                 "--state-root", state, "--interposer-path", interposer,
                                 "--pod-resources-socket", podres_sock, "--reclaim-interval", "1",
                                 "--reclaim-grace", "0", "--besteffort-guard-us", "450",
                                 "--critical-prime-us", "500"]).start()
    try:
        regs = kub.wait_registrations(3)
        names = sorted(r[1].resource_name for r in regs)
        tap.ok(names == ["gpuslice.io/gpu-compute", "gpuslice.io/gpu-memory", "gpuslice.io/realtime"],
               "registers three fractional resources", "%s\n%s" % (names, agent.tail()))
        tap.ok(all(r[1].version == "v1beta1" and r[1].options.get_preferred_allocation_available for r in regs),
               "RegisterRequest says v1beta1 and GetPreferredAllocation")
        tap.ok(all(r[3] is None and r[2] is not None for r in regs),
               "GetDevicePluginOptions answered inside Register (no deadlock)", [r[3] for r in regs])
        ep = {r[1].resource_name: r[1].endpoint for r in regs}
        mem = fk.Plugin(dp, os.path.join(kdir, ep.get("gpuslice.io/gpu-memory", "x")))
        cpt = fk.Plugin(dp, os.path.join(kdir, ep.get("gpuslice.io/gpu-compute", "x")))
        rt = fk.Plugin(dp, os.path.join(kdir, ep.get("gpuslice.io/realtime", "x")))

        # (16 GiB - 8 tenants x 608 MiB context reserve) / 256 MiB = 45 units per GPU.
        mq, mcall = mem.watch()
        devs = next_list(mq)
        tap.ok(devs is not None and len(devs) == 90 and all(h == "Healthy" for _, h in devs),
               "ListAndWatch lists 45 memory units per GPU, healthy", devs and len(devs))
        cq, ccall = cpt.watch()
        cdevs = next_list(cq)
        tap.ok(cdevs is not None and len(cdevs) == 200, "ListAndWatch lists 100 compute units per GPU")
        with open(os.path.join(state, "_agent", "node")) as f:
            node = f.read()
        tap.ok("memory_unit = 268435456" in node and "simulated = true" in node,
               "node file publishes the memory unit and says simulated", node)

        # One container: 8 memory units + 30 compute units -> one slice.
        m_ids = ["gpu0-mem-%04d" % i for i in range(8)]
        c_ids = ["gpu0-pct-%03d" % i for i in range(30)]
        lat = []
        t0 = time.monotonic()
        r1 = mem.allocate(m_ids)
        lat.append(time.monotonic() - t0)
        r2 = cpt.allocate(c_ids)
        e1, e2 = envs(r1), envs(r2)
        tap.ok(e1.get("GPUSLICE_SLICE_ID") and e1.get("GPUSLICE_SLICE_ID") == e2.get("GPUSLICE_SLICE_ID"),
               "memory and compute Allocate of one container join one slice", (e1, e2))
        tap.ok(e1.get("NVIDIA_VISIBLE_DEVICES") == "SIM-GPU-0000" and e1.get("GPUSLICE_SIMULATED") == "1",
               "env names the GPU and says simulated", e1)
        mt = mounts(r1)
        want = {"/run/gpuslice/limits": True, "/run/gpuslice/ledger": False,
                "/usr/local/lib/gpuslice/libgpuslice.so": True, "/etc/ld.so.preload": True,
                "/run/gpuslice/peers": True}
        tap.ok({k: v[1] for k, v in mt.items()} == want and mt == mounts(r2),
               "mounts: limits ro, ledger rw, interposer ro, preload ro, peers ro; same in both replies", mt)
        lim_path = mt.get("/run/gpuslice/limits", ("",))[0]
        lim = read_limits(lim_path) if os.path.exists(lim_path) else {}
        tap.ok(lim.get("memory") == str(2 * GiB) and lim.get("compute") == "30" and
               lim.get("context_reserve") == str(608 * MiB) and lim.get("simulated") == "true" and
               lim.get("priority") == "best-effort" and lim.get("device") == "SIM-GPU-0000" and
               lim.get("yield") == "gate" and lim.get("guard_us") == "450" and lim.get("prime_us") == "0",
               "limits file: 2 GiB, 30%, context reserve 608 MiB, simulated; gate with the guard at 450 us, "
               "no prime",
               lim)
        tap.ok(os.path.exists(lim_path) and stat.S_IMODE(os.stat(lim_path).st_mode) == 0o444,
               "limits file is read-only (0444)")
        with open(mt["/etc/ld.so.preload"][0]) as f:
            tap.ok(f.read().strip() == "/usr/local/lib/gpuslice/libgpuslice.so", "preload file names the interposer")

        # Realtime: memory + realtime slot -> critical priority.
        time.sleep(0.01)
        r3 = mem.allocate(["gpu0-mem-%04d" % i for i in range(8, 12)])
        r4 = rt.allocate(["gpu0-rt-0"])
        lim3 = read_limits(mounts(r3)["/run/gpuslice/limits"][0])
        tap.ok(envs(r3)["GPUSLICE_SLICE_ID"] == envs(r4)["GPUSLICE_SLICE_ID"] and lim3.get("priority") == "critical"
               and lim3.get("memory") == str(1 * GiB) and envs(r3)["GPUSLICE_SLICE_ID"] != e1["GPUSLICE_SLICE_ID"]
               and lim3.get("guard_us") == "0" and lim3.get("prime_us") == "500",
               "realtime slot joins the next container's slice as critical (no guard; the prime at 500 us)", lim3)
        tap.ok("critical_prime_us = 500 is not below besteffort_guard_us = 450" in agent.tail(400),
               "the agent says a prime not below the guard undoes itself", agent.tail())

        # GetPreferredAllocation: the open slice's GPU first; else best fit.
        avail = ["gpu0-mem-%04d" % i for i in range(12, 45)] + ["gpu1-mem-%04d" % i for i in range(45)]
        time.sleep(2.2)  # let the pairing window close
        pa = mem.preferred(avail, 4)
        ids = list(pa.container_responses[0].deviceIDs)
        tap.ok(len(ids) == 4 and all(i.startswith("gpu0-") for i in ids),
               "GetPreferredAllocation packs onto the fuller GPU (best fit)", ids)
        pa2 = mem.preferred(avail, 40)
        ids2 = list(pa2.container_responses[0].deviceIDs)
        tap.ok(len(ids2) == 40 and all(i.startswith("gpu1-") for i in ids2),
               "GetPreferredAllocation picks the GPU that fits a large request", ids2[:3])
        rc_ = cpt.allocate(["gpu1-pct-%03d" % i for i in range(10)])
        pa3 = mem.preferred(avail, 4)
        ids3 = list(pa3.container_responses[0].deviceIDs)
        tap.ok(all(i.startswith("gpu1-") for i in ids3),
               "GetPreferredAllocation follows the container's open slice to its GPU", ids3)
        mem.allocate(ids3)
        lim_c = read_limits(mounts(rc_)["/run/gpuslice/limits"][0])
        tap.ok(lim_c.get("memory") == str(1 * GiB) and lim_c.get("compute") == "10",
               "compute-first container gets its memory joined", lim_c)

        # Errors: spanning GPUs, unknown, duplicate, empty, huge, garbage.
        code, msg = rpc_code(lambda: mem.allocate(["gpu0-mem-0030", "gpu1-mem-0030"]))
        tap.ok(code == grpc.StatusCode.FAILED_PRECONDITION and "one GPU" in msg,
               "Allocate across two GPUs fails clearly", (code, msg))
        code, msg = rpc_code(lambda: mem.allocate(["gpu0-mem-9999"]))
        tap.ok(code == grpc.StatusCode.INVALID_ARGUMENT and "unknown device ID" in msg,
               "unknown device ID is INVALID_ARGUMENT", (code, msg))
        code, msg = rpc_code(lambda: mem.allocate(["gpu0-mem-0040", "gpu0-mem-0040"]))
        tap.ok(code == grpc.StatusCode.INVALID_ARGUMENT and "twice" in msg, "duplicate device ID is refused", (code, msg))
        code, msg = rpc_code(lambda: mem.allocate())
        tap.ok(code == grpc.StatusCode.INVALID_ARGUMENT, "empty AllocateRequest is refused", (code, msg))
        code, msg = rpc_code(lambda: mem.allocate([]))
        tap.ok(code == grpc.StatusCode.INVALID_ARGUMENT and "no device IDs" in msg,
               "container request without IDs is refused", (code, msg))
        code, msg = rpc_code(lambda: mem.allocate(["gpu0-mem-%04d" % (i % 45) for i in range(5000)]))
        tap.ok(code == grpc.StatusCode.INVALID_ARGUMENT and "only 90" in msg, "5000-ID request is refused", (code, msg))
        code, msg = rpc_code(lambda: mem.allocate(raw=b"\x0a\x05" + b"x" * (5 << 20)))
        tap.ok(code == grpc.StatusCode.RESOURCE_EXHAUSTED, "5 MiB request: RESOURCE_EXHAUSTED", (code, msg))
        code, msg = rpc_code(lambda: mem.allocate(raw=b"\xff\xff\xff\xff\x0f garbage"))
        tap.ok(code == grpc.StatusCode.INVALID_ARGUMENT, "garbage bytes: INVALID_ARGUMENT", (code, msg))
        code, msg = rpc_code(lambda: mem.call("Frobnicate", fk_empty(dp), dp.Empty))
        tap.ok(code == grpc.StatusCode.UNIMPLEMENTED, "unknown method: UNIMPLEMENTED", (code, msg))
        tap.ok(agent.alive() and mem.options().get_preferred_allocation_available,
               "agent stays up and answers after bad requests")

        # Allocate latency (for docs/benchmarks.md).
        for i in range(20):
            t0 = time.monotonic()
            mem.allocate(["gpu1-mem-%04d" % (20 + (i % 20))])
            lat.append(time.monotonic() - t0)
            time.sleep(0.001)
        lat_ms = sorted(x * 1000 for x in lat)
        print("# allocate latency ms: p50 %.2f p95 %.2f max %.2f (n=%d)" % (
            statistics.median(lat_ms), lat_ms[int(len(lat_ms) * 0.95) - 1], lat_ms[-1], len(lat_ms)))

        # Health: a critical XID on GPU 1 -> its units go Unhealthy.
        while not mq.empty():
            mq.get()
        with open(health, "w") as f:
            f.write("1 79\n")
        t0 = time.monotonic()
        upd = next_list(mq, 5)
        dt = time.monotonic() - t0
        ok = upd is not None and all(h == "Unhealthy" for i, h in upd if i.startswith("gpu1-")) and \
            all(h == "Healthy" for i, h in upd if i.startswith("gpu0-"))
        tap.ok(ok, "ListAndWatch sends GPU 1 Unhealthy after XID 79 (%.0f ms)" % (dt * 1000), upd and upd[:2])
        cupd = next_list(cq, 5)
        tap.ok(cupd is not None and any(h == "Unhealthy" for _, h in cupd), "every resource's stream gets the update")
        with open(health, "w") as f:
            f.write("1 13\n")  # application XID: not a GPU fault
        upd = next_list(mq, 5)
        tap.ok(upd is not None and all(h == "Healthy" for _, h in upd), "application XID 13 is ignored (healthy again)")

        # Reclaim: the kubelet lists only the first container's devices.
        before = sorted(d for d in os.listdir(state) if d.startswith("gs-"))
        keep = e1["GPUSLICE_SLICE_ID"]
        podres.response = pr.ListPodResourcesResponse(pod_resources=[pr.PodResources(
            name="a", namespace="default", containers=[pr.ContainerResources(name="c", devices=[
                pr.ContainerDevices(resource_name="gpuslice.io/gpu-memory", device_ids=m_ids)])])])
        podres.start()
        after = wait_for(lambda: (lambda l: l if l == [keep] else None)(
            sorted(d for d in os.listdir(state) if d.startswith("gs-"))), timeout=6)
        tap.ok(len(before) > 1 and after == [keep], "PodResources reclaim removes slices of gone containers",
               "%s -> %s\n%s" % (before, after, agent.tail(8)))

        # Kubelet restart: it deletes plugin sockets, then re-creates kubelet.sock.
        mem.close(); cpt.close(); rt.close()
        kub.stop()
        kubelet_restart_clears(kdir)
        while not kub.registrations.empty():
            kub.registrations.get()
        kub2 = fk.Kubelet(dp, kdir)
        t0 = time.monotonic()
        kub2.start()
        regs = kub2.wait_registrations(3, timeout=5)
        dt = max((r[0] for r in regs), default=t0 + 99) - t0
        tap.ok(len(regs) == 3 and all(r[3] is None for r in regs) and dt < slack(1.0),
               "re-registers all resources within %g s of kubelet.sock re-creation (%.0f ms)"
               % (slack(1.0), dt * 1000),
               "%s\n%s" % ([r[1].resource_name for r in regs], agent.tail(10)))
        mem = fk.Plugin(dp, os.path.join(kdir, ep["gpuslice.io/gpu-memory"]))
        q2, _ = mem.watch()
        l2 = next_list(q2)
        tap.ok(l2 is not None and len(l2) == 90, "ListAndWatch works on the new socket")
        mem.close()
        kub2.stop()
        podres.stop()
    finally:
        rc = agent.stop()
    tap.ok(rc == 0, "SIGTERM: agent exits 0", agent.tail())
    tap.ok(not any(f.startswith("gpuslice-") for f in os.listdir(kdir)), "SIGTERM: our sockets are removed",
           os.listdir(kdir))
    if tap.failed:
        print("# agent log:\n# " + agent.tail(40).replace("\n", "\n# "))


def fk_empty(dp):
    return dp.Empty()


def replica(tmp, dp, pr):
    kdir = os.path.join(tmp, "dp2")
    os.makedirs(kdir)
    state = os.path.join(tmp, "state2")
    sharing = os.path.join(tmp, "sharing.yaml")
    with open(sharing, "w") as f:
        f.write("version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n"
                "    renameByDefault: false\n    failRequestsGreaterThanOne: true\n"
                "    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
    kub = fk.Kubelet(dp, kdir)
    kub.start()
    agent = Agent(tmp, "agent-replica", ["--backend", "simulated", "--kubelet-dir", kdir, "--state-root", state,
                                         "--sharing-config", sharing, "--realtime-slots-per-gpu", "0",
                                         "--device-list-strategy", "cdi-cri", "--reclaim-interval", "0"]).start()
    try:
        regs = kub.wait_registrations(1)
        tap.ok(len(regs) == 1 and regs[0][1].resource_name == "nvidia.com/gpu" and
               regs[0][1].endpoint == "nvidia-gpu.sock",
               "replica mode registers nvidia.com/gpu like NVIDIA's plugin", [r[1] for r in regs] or agent.tail())
        if not regs:
            return
        p = fk.Plugin(dp, os.path.join(kdir, regs[0][1].endpoint))
        q, _ = p.watch()
        devs = next_list(q)
        tap.ok(devs is not None and sorted(i for i, _ in devs) == ["SIM-GPU-0000::%d" % k for k in range(4)],
               "4 replicas with NVIDIA-style IDs", devs)
        r = p.allocate(["SIM-GPU-0000::2"])
        lim = read_limits(mounts(r)["/run/gpuslice/limits"][0])
        # (16 GiB - 4 x 608 MiB) / 4 = 3488 MiB, 25 %.
        tap.ok(lim.get("memory") == str(3488 * MiB) and lim.get("compute") == "25",
               "a replica is enforced: 3488 MiB and 25%", lim)
        tap.ok(lim.get("yield") == "gate" and lim.get("guard_us") == "600",
               "by default a best-effort slice gates, with the guard at 600 us", lim)
        c = r.container_responses[0]
        tap.ok([d.name for d in c.cdi_devices] == ["nvidia.com/gpu=SIM-GPU-0000"] and
               dict(c.envs).get("NVIDIA_VISIBLE_DEVICES") == "void",
               "cdi-cri strategy: CDI device name, NVIDIA_VISIBLE_DEVICES=void", c)
        code, msg = rpc_code(lambda: p.allocate(["SIM-GPU-0000::0", "SIM-GPU-0000::1"]))
        tap.ok(code == grpc.StatusCode.INVALID_ARGUMENT and "maximum request size for shared resources is 1" in msg,
               "failRequestsGreaterThanOne refuses 2 replicas with NVIDIA's message", (code, msg))
        p.close()
    finally:
        tap.ok(agent.stop() == 0, "replica agent stops cleanly", agent.tail())
        kub.stop()

    # renameByDefault and a bad config.
    with open(sharing, "w") as f:
        f.write("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
                "    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n")
    kub = fk.Kubelet(dp, kdir)
    kub.start()
    agent = Agent(tmp, "agent-rename", ["--backend", "simulated", "--kubelet-dir", kdir, "--state-root", state,
                                        "--sharing-config", sharing, "--realtime-slots-per-gpu", "0",
                                        "--reclaim-interval", "0"]).start()
    regs = kub.wait_registrations(1)
    tap.ok(len(regs) == 1 and regs[0][1].resource_name == "nvidia.com/gpu.shared", "renameByDefault: nvidia.com/gpu.shared")
    agent.stop()
    kub.stop()
    # NVIDIA's sharing.mps: the same replicas, run as MPS clients.
    with open(sharing, "w") as f:
        f.write("version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n")
    kub = fk.Kubelet(dp, kdir)
    kub.start()
    agent = Agent(tmp, "agent-nvmps", ["--backend", "simulated", "--kubelet-dir", kdir, "--state-root", state,
                                       "--sharing-config", sharing, "--realtime-slots-per-gpu", "0",
                                       "--reclaim-interval", "0", "--mps-daemon", "external"]).start()
    try:
        regs = kub.wait_registrations(1)
        tap.ok(len(regs) == 1 and regs[0][1].resource_name == "nvidia.com/gpu",
               "NVIDIA's sharing.mps config registers nvidia.com/gpu replicas", agent.tail())
        if regs:
            p = fk.Plugin(dp, os.path.join(kdir, regs[0][1].endpoint))
            r = p.allocate(["SIM-GPU-0000::1"])
            lim = read_limits(mounts(r)["/run/gpuslice/limits"][0])
            tap.ok(lim.get("sharing") == "mps" and lim.get("compute") == "50" and
                   envs(r).get("CUDA_MPS_PIPE_DIRECTORY") == "/run/gpuslice/mps",
                   "sharing.mps: each replica is an enforced slice that runs as an MPS client", (lim, envs(r)))
            p.close()
    finally:
        agent.stop()
        kub.stop()
    with open(sharing, "w") as f:
        f.write("version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
                "  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n")
    res = subprocess.run([os.path.join(fk.BUILD, "gpuslice"), "agent", "--backend", "simulated",
                          "--kubelet-dir", kdir, "--state-root", state, "--sharing-config", sharing],
                         capture_output=True, timeout=20)
    tap.ok(res.returncode != 0 and b"keep one" in res.stderr, "both sharing modes at once are refused clearly",
           res.stderr.decode(errors="replace"))
    sim = os.path.join(tmp, "jetson.conf")
    with open(sim, "w") as f:
        f.write("gpus = 1\nmemory = 8Gi\nintegrated = true\n")
    res = subprocess.run([os.path.join(fk.BUILD, "gpuslice"), "agent", "--backend", "simulated", "--sim-config", sim,
                          "--kubelet-dir", kdir, "--state-root", state, "--compute-sharing", "mps"],
                         capture_output=True, timeout=20)
    tap.ok(res.returncode != 0 and b"no MPS" in res.stderr and b"compute_sharing = timeslice" in res.stderr,
           "MPS on a Jetson-like GPU is refused with the fix", res.stderr.decode(errors="replace"))


def plugins(kub, agent, dp, kdir, what):
    """The memory and realtime plugins of an agent that registered with kub
    (None, None if it did not: the test says so)."""
    regs = kub.wait_registrations(3)
    ep = {r[1].resource_name: r[1].endpoint for r in regs}
    tap.ok(len(regs) == 3, what + " agent registers its resources", agent.tail())
    if len(regs) != 3:
        return None, None
    return (fk.Plugin(dp, os.path.join(kdir, ep["gpuslice.io/gpu-memory"])),
            fk.Plugin(dp, os.path.join(kdir, ep["gpuslice.io/realtime"])))


def mps(tmp, dp, pr):
    """compute_sharing = mps: the daemon's pipe directory (and shm) reach each
    container, and the limits carry the per-client settings. The daemon is
    external here; mps_daemon_test.py has the agent run one."""
    kdir = os.path.join(tmp, "dp3")
    os.makedirs(kdir)
    state = os.path.join(tmp, "state3")
    pipe = os.path.join(tmp, "mps-pipe")
    shm = os.path.join(tmp, "mps-shm")
    os.makedirs(pipe)
    os.makedirs(shm)
    kub = fk.Kubelet(dp, kdir)
    kub.start()
    agent = Agent(tmp, "agent-mps", ["--backend", "simulated", "--kubelet-dir", kdir, "--state-root", state,
                                     "--reclaim-interval", "0", "--compute-sharing", "mps",
                                     "--mps-pipe-dir", pipe, "--mps-shm-dir", shm, "--mps-daemon", "external",
                                     "--besteffort-mps-threads", "60"]).start()
    try:
        mem, rt = plugins(kub, agent, dp, kdir, "MPS")
        if not mem:
            return
        r = mem.allocate(["gpu0-mem-0000", "gpu0-mem-0001"])
        mt, e = mounts(r), envs(r)
        lim = read_limits(mt["/run/gpuslice/limits"][0])
        tap.ok(e.get("CUDA_MPS_PIPE_DIRECTORY") == "/run/gpuslice/mps" and
               mt.get("/run/gpuslice/mps") == (pipe, False) and mt.get("/dev/shm") == (shm, False),
               "MPS: the daemon's pipe directory and shm are mounted, CUDA_MPS_PIPE_DIRECTORY names it", (e, mt))
        tap.ok(lim.get("sharing") == "mps" and lim.get("mps_threads") == "60" and lim.get("yield") == "bound" and
               lim.get("prime_us") == "0" and
               lim.get("priority") == "best-effort" and lim.get("guard_us") == "0",
               "MPS best-effort limits: sharing mps, 60% threads, yield bound (auto), no guard", lim)
        tap.ok("guard" not in agent.tail(200), "the default guard goes unmentioned where it does nothing",
               agent.tail())
        r2 = mem.allocate(["gpu0-mem-0002"])
        rt.allocate(["gpu0-rt-0"])
        lim2 = read_limits(mounts(r2)["/run/gpuslice/limits"][0])
        tap.ok(lim2.get("priority") == "critical" and lim2.get("mps_threads") == "0" and lim2.get("sharing") == "mps",
               "MPS critical limits: all threads", lim2)
        mem.close()
        rt.close()
    finally:
        tap.ok(agent.stop() == 0, "MPS agent stops cleanly", agent.tail())
        kub.stop()
    log = open(os.path.join(tmp, "agent-mps.log"), errors="replace").read()
    tap.ok("no MPS control daemon at " + pipe + "/control" in log, "MPS agent warns when no daemon runs", log[-600:])


def mps_shrink(tmp, dp, pr):
    """critical_yield = shrink: best-effort limits carry yield shrink and the
    green-context SM count; critical ones none."""
    kdir = os.path.join(tmp, "dp4")
    os.makedirs(kdir)
    pipe = os.path.join(tmp, "mps-pipe4")
    os.makedirs(pipe)
    kub = fk.Kubelet(dp, kdir)
    kub.start()
    agent = Agent(tmp, "agent-shrink", ["--backend", "simulated", "--kubelet-dir", kdir,
                                        "--state-root", os.path.join(tmp, "state4"), "--reclaim-interval", "0",
                                        "--compute-sharing", "mps", "--mps-pipe-dir", pipe,
                                        "--mps-daemon", "external", "--critical-yield", "shrink", "--besteffort-green-sms", "64",
                                        "--besteffort-guard-us", "450", "--critical-prime-us", "400"]).start()
    try:
        mem, rt = plugins(kub, agent, dp, kdir, "shrink")
        if not mem:
            return
        lim = read_limits(mounts(mem.allocate(["gpu0-mem-0000"]))["/run/gpuslice/limits"][0])
        tap.ok(lim.get("yield") == "shrink" and lim.get("green_sms") == "64" and lim.get("guard_us") == "0",
               "critical_yield shrink: best-effort limits say yield shrink on 64 SMs (no guard)", lim)
        tap.ok("besteffort_guard_us = 450 has no effect" in agent.tail(200),
               "the agent says the guard does nothing with shrink", agent.tail())
        tap.ok("critical_prime_us = 400 has no effect" in agent.tail(200),
               "the agent says the prime does nothing under MPS", agent.tail())
        r2 = mem.allocate(["gpu0-mem-0001"])
        rt.allocate(["gpu0-rt-0"])
        lim2 = read_limits(mounts(r2)["/run/gpuslice/limits"][0])
        tap.ok(lim2.get("priority") == "critical" and lim2.get("green_sms") == "0" and lim2.get("prime_us") == "0",
               "critical limits: no green context, no prime under MPS", lim2)
        mem.close()
        rt.close()
    finally:
        tap.ok(agent.stop() == 0, "shrink agent stops cleanly", agent.tail())
        kub.stop()


def shutdown(tmp, dp, pr):
    """SIGTERM right after a kubelet restart, with the agent's Register in
    flight: it exits 0 within a second, whether the kubelet answers (the agent
    serves its call back meanwhile) or keeps Register waiting (the agent leaves
    the call). The bound asserted is looser (3 s) for loaded machines, and
    slack()'s 4.5 s under TSan (3.1 s seen on a loaded CI machine), still
    below the 5 s Register deadline it must not wait out; the figures are
    printed."""
    kdir = os.path.join(tmp, "dp5")
    os.makedirs(kdir)
    for hold in (False, True):
        kub = fk.Kubelet(dp, kdir)
        kub.start()
        name = "agent-term-%s" % ("held" if hold else "answered")
        agent = Agent(tmp, name, ["--backend", "simulated", "--kubelet-dir", kdir,
                                  "--state-root", os.path.join(tmp, "state5"), "--reclaim-interval", "0"]).start()
        what = "a kubelet that keeps Register waiting" if hold else "a kubelet that answers"
        try:
            regs = kub.wait_registrations(3)
            tap.ok(len(regs) == 3, "agent registers before the kubelet restarts (%s)" % what, agent.tail())
            kub.stop()
            kubelet_restart_clears(kdir)
            kub = fk.Kubelet(dp, kdir, hold=hold)
            kub.start()
            in_flight = kub.registering.wait(5)
            t0 = time.monotonic()
            agent.proc.send_signal(signal.SIGTERM)
            try:
                rc = agent.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rc = None
            dt = time.monotonic() - t0
        finally:
            agent.stop()
            kub.stop()
        print("# SIGTERM with Register in flight, %s: exit %s in %.0f ms" % (what, rc, dt * 1000))
        tap.ok(in_flight and rc == 0 and dt < slack(3.0),
               "SIGTERM with Register in flight (%s): exits 0 in %.0f ms" % (what, dt * 1000),
               "in flight %s, rc %s\n%s" % (in_flight, rc, agent.tail()))
        tap.ok(not any(f.startswith("gpuslice-") for f in os.listdir(kdir)),
               "SIGTERM with Register in flight (%s): our sockets are removed" % what, os.listdir(kdir))
        if hold:
            tap.ok("has not returned within" in agent.tail(), "the agent says it left the call", agent.tail())


def main():
    tmp = tempfile.mkdtemp(prefix="gsk", dir="/tmp")  # short: unix socket paths
    try:
        dp, pr = fk.load_protos(tmp)
        fractional(tmp, dp, pr)
        replica(tmp, dp, pr)
        mps(tmp, dp, pr)
        mps_shrink(tmp, dp, pr)
        shutdown(tmp, dp, pr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
