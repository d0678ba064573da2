"""Session 21: one process's host-bound work, for eager_turns.py: REQUESTS requests of an
eager model from bench/workloads.py (or SECONDS of training steps), after a warm-up.

  python3 eager_request.py decode|bert|resnet50|train BATCH COUNT [TOKENS]
Prints one JSON line: p50, mean and p99 in ms (or steps per second).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import workloads  # noqa: E402
import torch  # noqa: E402

name, batch, count = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if name == "train":
    step, _, _ = workloads.best_effort_job(torch, "train", train_batch=batch)
    for _ in range(20):
        step()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < count:
        step()
        n += 1
    print(json.dumps({"steps_per_s": n / (time.perf_counter() - t0)}))
    sys.exit(0)
tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 16
with torch.no_grad():
    req, _ = workloads.critical_model(torch, name, batch, False, tokens=tokens)
    for _ in range(10):
        req()
    torch.cuda.synchronize()
    lat = []
    for _ in range(int(count)):
        t0 = time.perf_counter()
        req()
        torch.cuda.synchronize()
        lat.append(1000 * (time.perf_counter() - t0))
lat.sort()
print(json.dumps({"p50_ms": lat[len(lat) // 2], "mean_ms": sum(lat) / len(lat), "p99_ms": lat[(len(lat) * 99) // 100]}))
