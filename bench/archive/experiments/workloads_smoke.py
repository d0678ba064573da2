"""Session 21: each workload of bench/workloads.py on the GPU, alone, natively and under
`gpuslice run` (so the harness's device call does not find a broken model): a request's
p50 and p99 (eager and graph), the training job's steps per second.

  python3 bench/archive/experiments/workloads_smoke.py [--only NAME]
Prints one JSON line per workload.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import workloads  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--only", default="")
ap.add_argument("--requests", type=int, default=60)
a = ap.parse_args()
import torch  # noqa: E402

CASES = [("decode", 1, True), ("decode", 1, False), ("bert", 1, True), ("bert", 1, False), ("bert", 8, True),
         ("resnet50", 8, True)]
for model, batch, graph in CASES:
    if a.only and a.only != model and a.only != "all-critical":
        continue
    t0 = time.time()
    try:
        with torch.no_grad():
            req, desc = workloads.critical_model(torch, model, batch, graph, tokens=16)
            lat = []
            for _ in range(a.requests):
                s = time.perf_counter()
                req()
                torch.cuda.synchronize()
                lat.append(1000 * (time.perf_counter() - s))
        lat.sort()
        print(json.dumps({"model": model, "batch": batch, "graph": graph, "p50_ms": round(lat[len(lat) // 2], 3),
                          "p99_ms": round(lat[-1 - len(lat) // 100], 3), "setup_s": round(time.time() - t0, 1)}),
              flush=True)
    except Exception as ex:  # the next workload still runs
        print(json.dumps({"model": model, "batch": batch, "graph": graph, "error": repr(ex)[:400]}), flush=True)
if not a.only or a.only == "train":
    for tb in (32, 64):
        try:
            step, unit, per = workloads.best_effort_job(torch, "train", train_batch=tb)
            s = time.perf_counter()
            n = 0
            while time.perf_counter() - s < 3.0:
                step()
                n += 1
            print(json.dumps({"job": "train", "train_batch": tb, "steps_per_s": round(n / (time.perf_counter() - s), 2),
                              "mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}), flush=True)
        except Exception as ex:
            print(json.dumps({"job": "train", "train_batch": tb, "error": repr(ex)[:400]}), flush=True)
