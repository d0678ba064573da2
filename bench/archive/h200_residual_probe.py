"""Issue 6, session 8: what costs the critical request after a best-effort tenant ran,
when the clock is not the reason (session 7, run 7: A's median +8-10 % at 1,980 MHz).

One process A replays the graph-launched ResNet-50 (fp16, batch 8, as the phases harness);
a helper process H (the same script, --helper) has its own CUDA context, as a best-effort
tenant under time-slicing does. Before each of A's timed requests, after A's think time,
one condition runs to completion (synchronised), in shuffled order so every condition
sees the same drift:

  idle           nothing (the reference)
  own_sweep      A copies SWEEP MiB on its own stream: its L2 holds other data; no other
                 context, little power
  own_gemm       A runs BURST bf16 4096 GEMMs on its own stream (B's kernel, for about as
                 long as B runs in A's gap): L2 and power, no other context
  other_none     H is asked and answers without touching the GPU: the handshake alone
  other_tiny     H runs one tiny kernel: the GPU switches to H's context and back, little else
  other_sweep    H copies SWEEP MiB: the switch and the L2
  other_gemm     H runs the BURST GEMMs: the switch, the L2 and the power, as B in A's gap
  other_gemm_w1  the same, then 1 ms idle before the request (the clock's recovery)
  own_gemm_w1    own_gemm, then 1 ms idle
  idle_prime     A launches one tiny kernel on a side stream of its own (not waited for),
                 0.25 ms before the request: what a critical tenant's interposer could do
  other_gemm_prime   other_gemm, then A's tiny kernel 0.25 ms before the request: does the
                 switch back to A's context then happen before the request?
  other_gemm_prime0  the same with the tiny kernel right before the request

Each request is timed on the host (as the harness does) and on the GPU (CUDA events
around the replay, recorded on A's stream: they start once A's context runs, so
wall - GPU is the launch and anything before A's first kernel). Ratios are against
idle, within this one run.

  python3 bench/h200_residual_probe.py --out OUT/probe.json [--requests 800] [--think-ms 3]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from h200_common import capture_graph, pct  # noqa: E402

# condition: (whose work, what, ms idle after it, A's tiny kernel before the request: ms ahead or None)
PLAN = {"idle": (None, None, 0, None), "own_sweep": ("own", "sweep", 0, None), "own_gemm": ("own", "gemm", 0, None),
        "other_none": ("other", "none", 0, None), "other_tiny": ("other", "tiny", 0, None),
        "other_sweep": ("other", "sweep", 0, None), "other_gemm": ("other", "gemm", 0, None),
        "other_gemm_w1": ("other", "gemm", 1, None), "own_gemm_w1": ("own", "gemm", 1, None),
        "idle_prime": (None, None, 0, 0.25), "other_gemm_prime": ("other", "gemm", 0, 0.25),
        "other_gemm_prime0": ("other", "gemm", 0, 0.0)}
CONDITIONS = list(PLAN)


def summarise(samples):
    """samples: {condition: [(wall_ms, gpu_ms), ...]} -> rows with ratios against idle."""
    ref = samples.get("idle") or []
    r50, r99 = pct([w for w, _ in ref], 50), pct([w for w, _ in ref], 99)
    g50 = pct([g for _, g in ref], 50)
    rows = []
    for name in CONDITIONS:
        s = samples.get(name) or []
        if not s:
            continue
        w = [x for x, _ in s]
        g = [x for _, x in s]
        row = {"condition": name, "n": len(s), "p50_ms": round(pct(w, 50), 4), "p99_ms": round(pct(w, 99), 4),
               "gpu_p50_ms": round(pct(g, 50), 4), "wall_minus_gpu_p50_ms": round(pct(w, 50) - pct(g, 50), 4)}
        if ref:
            row.update({"p50_ratio": round(pct(w, 50) / r50, 3), "p99_ratio": round(pct(w, 99) / r99, 3),
                        "gpu_p50_ratio": round(pct(g, 50) / g50, 3)})
        rows.append(row)
    return rows


def table(rows):
    out = ["| before the request | n | p50 ms | p99 ms | p50 / idle | p99 / idle | GPU p50 / idle | wall - GPU ms |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['condition']} | {r['n']} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | "
                   f"{r.get('p50_ratio', 0):.3f} | {r.get('p99_ratio', 0):.3f} | {r.get('gpu_p50_ratio', 0):.3f} | "
                   f"{r['wall_minus_gpu_p50_ms']:.3f} |")
    return "\n".join(out)


def work(torch, bufs, what, burst):
    """One condition's GPU work, on the current stream, synchronised."""
    if what == "tiny":
        bufs["tick"].add_(1)
    elif what == "sweep":
        bufs["dst"].copy_(bufs["src"])
    elif what == "gemm":
        for _ in range(burst):
            torch.mm(bufs["a"], bufs["b"], out=bufs["c"])
    torch.cuda.synchronize()


def buffers(torch, sweep_mib):
    n = sweep_mib * 1024 * 1024 // 2
    return {"tick": torch.zeros(1, device="cuda"),
            "src": torch.ones(n, device="cuda", dtype=torch.half),
            "dst": torch.empty(n, device="cuda", dtype=torch.half),
            "a": torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16),
            "b": torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16),
            "c": torch.empty(4096, 4096, device="cuda", dtype=torch.bfloat16)}


def helper(args):
    """H: read a word per line (none, tiny, sweep, gemm), do it, answer."""
    if args.cpus:
        lo, _, hi = args.cpus.partition("-")
        os.sched_setaffinity(0, range(int(lo), int(hi or lo) + 1))
    import torch
    bufs = buffers(torch, args.sweep_mib)
    for w in ("tiny", "sweep", "gemm"):
        work(torch, bufs, w, args.burst)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        w = line.strip()
        if w == "quit":
            break
        if w != "none":
            work(torch, bufs, w, args.burst)
        sys.stdout.write("ok\n")
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="JSON with every sample and the summary")
    ap.add_argument("--requests", type=int, default=800, help="timed requests per condition")
    ap.add_argument("--think-ms", type=float, default=3.0)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--sweep-mib", type=int, default=192, help="size of each copy buffer (L2: 50 MB on an H200)")
    ap.add_argument("--burst", type=int, default=12, help="GEMMs in a burst (0.21 ms each on an H200)")
    ap.add_argument("--cpus", default="2-5", help="A's CPUs (H gets --helper-cpus)")
    ap.add_argument("--helper-cpus", default="8-11")
    ap.add_argument("--helper", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.helper:
        return helper(args)
    if not args.out:
        ap.error("--out is required")
    h = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--helper", "--cpus", args.helper_cpus,
                          "--sweep-mib", str(args.sweep_mib), "--burst", str(args.burst)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    if args.cpus:
        lo, _, hi = args.cpus.partition("-")
        os.sched_setaffinity(0, range(int(lo), int(hi or lo) + 1))
    import gc

    import torch
    import torchvision

    def ask(word):
        h.stdin.write(word + "\n")
        h.stdin.flush()
        if h.stdout.readline().strip() != "ok":
            sys.exit("h200_residual_probe: the helper process did not answer")

    model = torchvision.models.resnet50(weights=None).half().cuda().eval()
    x = torch.randn(args.batch, 3, 224, 224, device="cuda", dtype=torch.half)
    bufs = buffers(torch, args.sweep_mib)
    with torch.no_grad():
        graph = capture_graph(torch, model, x)
        side = torch.cuda.Stream()  # the prime conditions' tiny kernel goes here
        if h.stdout.readline().strip() != "ready":
            sys.exit("h200_residual_probe: the helper process did not start (torch and a GPU?)")
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        order = []
        rng = random.Random(8)
        for _ in range(args.requests):
            block = list(CONDITIONS)
            rng.shuffle(block)
            order += block
        for _ in range(200):  # clocks up, caches and graph warm
            graph.replay()
            torch.cuda.synchronize()
            time.sleep(args.think_ms / 1000)
        samples = {c: [] for c in CONDITIONS}
        gc.collect()
        gc.disable()
        t_begin = time.time()
        for c in order:
            time.sleep(args.think_ms / 1000)
            where, what, wait_ms, prime_ms = PLAN[c]
            if where == "own":
                work(torch, bufs, what, args.burst)
            elif where == "other":
                ask(what)
            if wait_ms:
                time.sleep(wait_ms / 1000)
            if prime_ms is not None:
                with torch.cuda.stream(side):
                    bufs["tick"].add_(1)
                if prime_ms:
                    time.sleep(prime_ms / 1000)
            t0 = time.perf_counter()
            e0.record()
            graph.replay()
            e1.record()
            torch.cuda.synchronize()
            wall = (time.perf_counter() - t0) * 1000
            samples[c].append((round(wall, 4), round(e0.elapsed_time(e1), 4)))
        gc.enable()
    h.stdin.write("quit\n")
    h.stdin.flush()
    h.wait(timeout=30)
    rows = summarise(samples)
    res = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "args": vars(args), "span_s": round(time.time() - t_begin, 1),
           "gpu": torch.cuda.get_device_name(), "summary": rows, "samples": samples}
    json.dump(res, open(args.out, "w"))
    print(table(rows))


if __name__ == "__main__":
    main()
