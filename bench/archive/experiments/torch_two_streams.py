"""Session 18: a PyTorch tenant of two streams. A side stream runs bf16 GEMMs (8192, 8
queued per sync) in a thread of its own; the main thread runs a small op on the default
stream and synchronises it, N times, 0.5 ms apart. Prints the small op's p50/p99/p99.9
(ms), how many GEMMs ran, and whether the side stream's last result matches the first
(the same inputs each time). Run it natively and under `gpuslice run --compute 100`.

  python3 bench/archive/experiments/torch_two_streams.py [N]
"""
import json
import sys
import threading
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
dev = torch.device("cuda")
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
x = torch.randn(256, device=dev)
side = torch.cuda.Stream()
first = a @ b
torch.cuda.synchronize()
done = False
gemms = 0
last = None


def side_loop():
    global gemms, last
    with torch.cuda.stream(side):
        while not done:
            for _ in range(8):
                last = a @ b
            side.synchronize()
            gemms += 8


t = threading.Thread(target=side_loop)
t.start()
time.sleep(0.2)
lat = []
for _ in range(n):
    t0 = time.perf_counter()
    y = x * 2 + 1
    torch.cuda.current_stream().synchronize()
    lat.append((time.perf_counter() - t0) * 1e3)
    time.sleep(0.0005)
done = True
t.join()
torch.cuda.synchronize()
lat.sort()
same = bool(torch.equal(last, first))
print(json.dumps({"n": n, "p50_ms": round(lat[n // 2], 3), "p99_ms": round(lat[n * 99 // 100], 3),
                  "p999_ms": round(lat[n * 999 // 1000], 3), "over_1ms": sum(v > 1 for v in lat),
                  "gemms": gemms, "side_result_same": same, "small_ok": bool(torch.allclose(y, x * 2 + 1))}))
