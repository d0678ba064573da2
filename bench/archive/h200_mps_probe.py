"""Issue 6, session 9: where MPS costs the critical tenant when it is alone.

Every MPS variant measured in sessions 2-8 left the graph-launched ResNet-50 (A) 15-23 %
slower alone than with its own context (p99 1.71-1.76 ms against 1.45-1.50 ms), before any
best-effort tenant ran. Running side by side is the only way a best-effort tenant can get
much more than A's idle time, so this probe takes that cost apart. One process at a time,
alone on the GPU, each variant in a fresh process:

  native        its own context, no MPS daemon
  native_spin   the same, primary context made with CU_CTX_SCHED_SPIN (ctypes, before torch)
  native_block  the same with CU_CTX_SCHED_BLOCKING_SYNC
  mps           an MPS client (a private daemon), the client's defaults
  mps_spin      an MPS client with CU_CTX_SCHED_SPIN
  mps_t100      an MPS client with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 set
  mps_t50       an MPS client at 50 % (how much A itself needs all the SMs)
  native_again  native, last (drift)

and in each it measures:

  request       the harness's request: replay, synchronize, timed on the host; CUDA events
                around the replay give its GPU span (2 ms think between requests)
  request_poll  the same, but waiting by polling the end event (no blocking sync)
  graph_queued  the graph's replay queued behind a 20 ms sleep kernel: its GPU time with
                the launch hidden (events around it)
  eager_queued  the model launched kernel by kernel, queued the same way: the GPU time of
                the same kernels from stream launches
  tiny_graph, tiny_stream   256 one-element adds, as a graph / as launches, queued: the
                GPU's time per kernel, between kernels
  gemm          16 bf16 4096 GEMMs queued: the SMs' speed
  empty_rt      an empty graph's (one tiny kernel) replay + synchronize on an idle GPU,
                timed on the host: the round trip of a launch and a wait
  launch_call   how long graph.replay() takes to return (host side of the launch)

Ratios are against `native` in the same run. It also says whether this driver's MPS daemon
starts with static SM partitioning (-S), and quits it at once.

  python3 bench/h200_mps_probe.py --out OUT/mps_probe.json [--variants native,mps] [--requests 400]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from h200_common import capture_graph, mps_control, mps_env, pct  # noqa: E402

# variant: (MPS underneath, the client's extra environment, primary-context sched flag or None)
VARIANTS = {"native": (False, {}, None), "native_spin": (False, {}, 1), "native_block": (False, {}, 4),
            "mps": (True, {}, None), "mps_spin": (True, {}, 1),
            "mps_t100": (True, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "100"}, None),
            "mps_t50": (True, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"}, None),
            "native_again": (False, {}, None)}
MEASURES = ["request", "request_poll", "graph_queued", "eager_queued", "tiny_graph", "tiny_stream", "gemm",
            "empty_rt", "launch_call"]
SLEEP_CYCLES = 40_000_000  # ~20 ms at 1,980 MHz: long enough to queue a whole eager pass behind it


def set_sched(flag):
    """Makes the primary context of device 0 with this scheduling flag (before torch
    creates it); an error string, or None."""
    import ctypes
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as ex:
        return f"libcuda.so.1: {ex}"
    if cu.cuInit(0) != 0:
        return "cuInit failed"
    dev = ctypes.c_int()
    if cu.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        return "cuDeviceGet failed"
    fn = getattr(cu, "cuDevicePrimaryCtxSetFlags_v2", None) or cu.cuDevicePrimaryCtxSetFlags
    rc = fn(dev, ctypes.c_uint(flag))
    return None if rc == 0 else f"cuDevicePrimaryCtxSetFlags({flag}) returned {rc}"


def summary(v):
    return {"n": len(v), "p50": round(pct(v, 50), 4), "p99": round(pct(v, 99), 4)}


def child(args):
    """One variant's measurements, alone on the GPU; prints one JSON line."""
    out = {"sched_error": set_sched(args.sched) if args.sched else None}
    if args.cpus:
        lo, _, hi = args.cpus.partition("-")
        os.sched_setaffinity(0, range(int(lo), int(hi or lo) + 1))
    import gc

    import torch
    import torchvision

    out["sms"] = torch.cuda.get_device_properties(0).multi_processor_count
    model = torchvision.models.resnet50(weights=None).half().cuda().eval()
    x = torch.randn(args.batch, 3, 224, 224, device="cuda", dtype=torch.half)
    t = torch.zeros(1, device="cuda")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(4096, 4096, device="cuda", dtype=torch.bfloat16)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    res = {m: [] for m in MEASURES}
    res["request_gpu"] = []

    def queued(fn):
        torch.cuda._sleep(SLEEP_CYCLES)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        return e0.elapsed_time(e1)

    with torch.no_grad():
        graph = capture_graph(torch, model, x)
        tiny = torch.cuda.CUDAGraph()
        with torch.cuda.graph(tiny):
            for _ in range(256):
                t.add_(1)
        empty = torch.cuda.CUDAGraph()
        with torch.cuda.graph(empty):
            t.add_(1)
        torch.cuda.synchronize()
        for _ in range(200):  # clocks up, everything warm
            graph.replay()
            torch.cuda.synchronize()
            time.sleep(args.think_ms / 1000)
        gc.collect()
        gc.disable()
        for poll in (False, True):
            for _ in range(args.requests):
                time.sleep(args.think_ms / 1000)
                t0 = time.perf_counter()
                e0.record()
                graph.replay()
                e1.record()
                if poll:
                    while not e1.query():
                        pass
                else:
                    torch.cuda.synchronize()
                wall = (time.perf_counter() - t0) * 1000
                res["request_poll" if poll else "request"].append(wall)
                if not poll:
                    res["request_gpu"].append(e0.elapsed_time(e1))
        for _ in range(args.queued):
            res["graph_queued"].append(queued(graph.replay))
            res["eager_queued"].append(queued(lambda: model(x)))
            res["tiny_graph"].append(queued(tiny.replay) * 1000 / 256)

            def stream_adds():
                for _ in range(256):
                    t.add_(1)
            res["tiny_stream"].append(queued(stream_adds) * 1000 / 256)

            def gemms():
                for _ in range(16):
                    torch.mm(a, b, out=c)
            res["gemm"].append(queued(gemms) / 16)
        for _ in range(args.requests):
            time.sleep(args.think_ms / 1000)
            t0 = time.perf_counter()
            empty.replay()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            res["empty_rt"].append((t2 - t0) * 1000)
            res["launch_call"].append((t1 - t0) * 1000)
        gc.enable()
    out["ms"] = {m: summary(v) for m, v in res.items()}
    out["units"] = "ms; tiny_graph and tiny_stream in us per kernel; gemm ms per GEMM"
    print(json.dumps(out), flush=True)


def static_partitioning():
    """Does this driver's MPS control daemon start with static SM partitioning (-S)?"""
    env = mps_env()
    e = dict(os.environ, **env)
    try:
        p = subprocess.run(["nvidia-cuda-mps-control", "-S", "-d"], env=e, capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.TimeoutExpired) as ex:
        return {"started": False, "error": str(ex)}
    said = (p.stdout + p.stderr).strip()[-400:]
    if p.returncode != 0:
        return {"started": False, "rc": p.returncode, "said": said}
    time.sleep(1)
    log = ""
    try:
        log = open(os.path.join(env["CUDA_MPS_LOG_DIRECTORY"], "control.log")).read()[-800:]
    except OSError:
        pass
    # A daemon that does not know -S prints its usage and exits 0, so the exit status
    # says nothing: a daemon that started has made its pipes.
    started = bool(os.listdir(env["CUDA_MPS_PIPE_DIRECTORY"]))
    mps_control(env, "quit")
    return {"started": started, "said": said, "control_log": log}


def ratios(res):
    ref = res.get("native", {}).get("ms")
    rows = []
    for name, r in res.items():
        if "ms" not in r:
            rows.append(f"| {name} | {r.get('error', 'no result')} |")
            continue
        cells = []
        for m in MEASURES + ["request_gpu"]:
            s = r["ms"][m]
            q = "p99" if m.startswith("request") else "p50"
            rel = s[q] / ref[m][q] if ref and ref[m][q] else 0
            cells.append(f"{s[q]:.4g} ({rel:.2f})")
        rows.append(f"| {name} | {r['sms']} | " + " | ".join(cells) + " |")
    head = "| variant | SMs | " + " | ".join(
        f"{m} {'p99' if m.startswith('request') else 'p50'}" for m in MEASURES + ["request_gpu"]) + " |"
    return "\n".join([head, "|" + "---|" * (len(MEASURES) + 3)] + rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="JSON with every variant's figures")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--queued", type=int, default=20, help="repetitions of each queued measurement")
    ap.add_argument("--think-ms", type=float, default=2.0)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--cpus", default="2-5")
    ap.add_argument("--no-static", action="store_true", help="do not try the daemon's -S")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sched", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if not args.out:
        ap.error("--out is required")
    names = [n for n in args.variants.split(",") if n]
    bad = [n for n in names if n not in VARIANTS]
    if bad:
        ap.error(f"unknown variant(s) {bad}; known: {', '.join(VARIANTS)}")
    res, mps = {}, None
    try:
        for n in names:
            under_mps, extra, sched = VARIANTS[n]
            env = dict(os.environ, **extra)
            if under_mps:
                if mps is None:
                    mps = mps_env()
                    mps_control(mps, "start")
                env.update(mps)
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--requests", str(args.requests),
                   "--queued", str(args.queued), "--think-ms", str(args.think_ms), "--batch", str(args.batch),
                   "--cpus", args.cpus]
            if sched:
                cmd += ["--sched", str(sched)]
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
            try:
                res[n] = json.loads(line)
            except ValueError:
                res[n] = {"error": f"rc {p.returncode}: {p.stderr.strip()[-600:]}"}
            print(n, json.dumps(res[n].get("ms", res[n])), flush=True)
    finally:
        if mps is not None:
            mps_control(mps, "quit")
    out = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "args": vars(args), "variants": res}
    if not args.no_static:
        out["static_partitioning"] = static_partitioning()
        print("static partitioning:", json.dumps(out["static_partitioning"]), flush=True)
    json.dump(out, open(args.out, "w"), indent=1)
    print(ratios(res))


if __name__ == "__main__":
    main()
