"""One tenant of the compute benchmarks (bench/shares.py and bench/latency.py run it).

  python3 bench/compute_tenant.py hog|infer --start WALLTIME [options]

  hog:   bf16 matmul loop; counts matmuls finished inside [start+warm, start+warm+secs]
  infer: ResNet-50 (random weights, fp16) requests with think time; latencies
  --schedule FILE (both modes): instead, work only in the phases the file lists for this
         tenant ([{"t0": wall time, "t1": .., "on": bool, "think_ms": .., "tag": ..}, ...]),
         idle in the others, and report per phase (bench/latency.py); there infer runs
         --model (resnet50, bert, decode) and hog --job (gemm, train): bench/workloads.py
Both wait for the shared wall-clock start time so tenants overlap exactly.
Prints one JSON line.
"""
import argparse
import gc
import json
import os
import random
import time

from workloads import best_effort_job, critical_model  # the same directory: on sys.path as a script

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("mode", choices=["hog", "infer"])
ap.add_argument("--start", type=float, required=True, help="wall-clock time to begin")
ap.add_argument("--warm", type=float, default=1.0)
ap.add_argument("--secs", type=float, default=6.0)
ap.add_argument("--size", type=int, default=8192)
ap.add_argument("--group", type=int, default=4,
                help="hog with --schedule: matmuls launched between synchronisations (small kernels "
                "with a large group: a framework that queues many before it waits)")
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--model", choices=["resnet50", "bert", "decode"], default="resnet50",
                help="infer with --schedule: the critical model (bench/workloads.py)")
ap.add_argument("--seq", type=int, default=128, help="--model bert: tokens per sequence")
ap.add_argument("--tokens", type=int, default=16, help="--model decode: tokens generated per request")
ap.add_argument("--job", choices=["gemm", "train"], default="gemm",
                help="hog with --schedule: the best-effort job (bench/workloads.py); train counts "
                "ResNet-50 training steps at --train-batch")
ap.add_argument("--train-batch", type=int, default=32, help="--job train: images per step")
ap.add_argument("--requests", type=int, default=1000)
ap.add_argument("--think-ms", type=float, default=2.0)
ap.add_argument("--think-dist", choices=["fixed", "exp"], default="fixed",
                help="infer: think times fixed, or drawn from an exponential distribution with that "
                "mean (requests at random, as from many clients; the same seeded sequence every run)")
ap.add_argument("--schedule", help="JSON list of phases (see above)")
ap.add_argument("--skip", type=float, default=0.3, help="schedule: seconds at a phase's start not counted")
ap.add_argument("--cpus", help="run on these CPUs only (e.g. 2-5), so the tenants' host threads do not "
                "share cores and A's tail measures the GPU, not the scheduler")
ap.add_argument("--no-gc", action="store_true",
                help="infer: no garbage collection during a phase (serving loops freeze it); "
                "collected between phases")
ap.add_argument("--graph", action="store_true",
                help="infer: replay the model as one CUDA graph (how serving stacks launch), so "
                "a request's latency is the GPU's, not Python's launch loop")
ap.add_argument("--warm-requests", type=int, default=100,
                help="infer: requests run after the start time and not counted, so the GPU's "
                "clocks are up (an idle H200 drops to 345 MHz during the wait)")
args = ap.parse_args()
import torch  # noqa: E402  (after the options, so --help needs no torch)

out = {"mode": args.mode, "pid": os.getpid()}
if args.cpus:
    lo, _, hi = args.cpus.partition("-")
    os.sched_setaffinity(0, range(int(lo), int(hi or lo) + 1))
    out["cpus"] = args.cpus

_rng = random.Random(6)


def think(ms):
    """Sleep between two requests."""
    if ms <= 0:
        return
    time.sleep((_rng.expovariate(1.0 / ms) if args.think_dist == "exp" else ms) / 1000.0)


def phases():
    """This tenant's active phases, in order, waiting for each to begin."""
    for ph in json.load(open(args.schedule)):
        if not ph["on"]:
            continue
        while time.time() < ph["t0"]:
            time.sleep(0.0005)
        yield ph


if args.schedule and args.mode == "hog":
    step, unit, per_step = best_effort_job(torch, args.job, size=args.size, group=args.group,
                                           train_batch=args.train_batch)
    out["ready_at"] = time.time()  # set up (the job built): against --start, how late it began
    out["phases"] = []
    for ph in phases():
        counted, t_from = 0, ph["t0"] + args.skip
        while True:
            step()
            now = time.time()
            if now > ph["t1"]:
                break
            if now >= t_from:
                counted += per_step
        done = {"tag": ph["tag"], "rate": counted / (ph["t1"] - t_from), "unit": unit}
        if unit == "matmuls":
            done["matmuls_per_s"] = done["rate"]  # the name bench/shares.py's readers know
        out["phases"].append(done)
    out["size"] = args.size
    out["job"] = args.job
elif args.schedule:
    out["phases"] = []
    with torch.no_grad():
        request, desc = critical_model(torch, args.model, args.batch, args.graph, seq=args.seq,
                                       tokens=args.tokens)
        for _ in range(20):
            request()
        torch.cuda.synchronize()
        out.update(desc)
        out["ready_at"] = time.time()
        for ph in phases():
            if args.no_gc:
                gc.collect()
                gc.disable()
            lat, busy, t_from = [], 0.0, ph["t0"] + args.skip
            while time.time() < ph["t1"]:
                t0 = time.perf_counter()
                w0 = time.time()
                request()
                torch.cuda.synchronize()
                dt = time.perf_counter() - t0
                if w0 >= t_from:
                    lat.append(dt)
                    busy += dt
                think(ph["think_ms"])
            gc.enable()
            span = ph["t1"] - t_from
            out["phases"].append({"tag": ph["tag"], "lat_ms": [round(1000 * v, 4) for v in lat],
                                  "busy_fraction": busy / span})
elif args.mode == "hog":
    a = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        a @ b
    torch.cuda.synchronize()
    while time.time() < args.start:
        time.sleep(0.001)
    t_from, t_to = args.start + args.warm, args.start + args.warm + args.secs
    done, counted, stamps, gpu_ms = 0, 0, [], 0.0
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    tick = torch.zeros(1, device="cuda")
    while True:
        # A tiny kernel first: a lump waiting for its compute window waits here,
        # so e0 starts the clock only once the lump may run.
        tick.add_(1)
        e0.record()
        for _ in range(4):
            a @ b
        e1.record()
        torch.cuda.synchronize()
        now = time.time()
        stamps.append(round(now, 4))
        if t_from <= now <= t_to:
            counted += 4
            gpu_ms += e0.elapsed_time(e1)  # GPU time of this lump, as CUDA measures it
        done += 4
        if now > t_to:
            break
    out["matmuls_per_s"] = counted / args.secs
    # Share of wall time the GPU spent on our kernels (events from PyTorch, not gpuslice).
    out["gpu_time_fraction"] = gpu_ms / 1000.0 / args.secs
    out["stamps"] = stamps  # completion time of each batch of 4
    out["size"] = args.size
else:
    with torch.no_grad():
        request, _ = critical_model(torch, "resnet50", args.batch, False)
        torch.cuda.synchronize()
        while time.time() < args.start:
            time.sleep(0.001)
        for _ in range(args.warm_requests):
            request()
            torch.cuda.synchronize()
            think(args.think_ms)
        lat, busy = [], 0.0
        t_begin = time.time()
        for _ in range(args.requests):
            t0 = time.perf_counter()
            request()
            torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            lat.append(dt)
            busy += dt
            think(args.think_ms)
        wall = time.time() - t_begin
        out["t_begin"], out["t_end"] = t_begin, t_begin + wall
    lat.sort()
    out["p50_ms"] = 1000 * lat[len(lat) // 2]
    out["p99_ms"] = 1000 * lat[(len(lat) * 99) // 100]
    out["requests"] = len(lat)
    out["busy_fraction"] = busy / wall
    out["wall_s"] = wall
print(json.dumps(out), flush=True)
