"""Issue 20, session 12: what a hard cap delivers, and what the GPU's power says about it.

  python3 bench/archive/experiments/cap_energy.py [--out results.json] [--secs 4]

A tenant under a hard cap runs in an exclusive window each 200 ms period and leaves the
GPU idle for the rest; a power-limited GPU then runs its window at a higher clock than
the tenant would get with the whole GPU, so it delivers more than its cap in work. Here a
workload runs alone at a set duty cycle shaped like the cap's windows (busy for duty x
200 ms, then idle to the period's end), no gpuslice, for three workloads: bf16 GEMMs of
8192 and 4096 (power-bound) and a 1 GiB device copy (memory-bound). Per duty: the work
per wall second against full duty, the work per busy second, and from NVML's energy
counter the power while the workload ran (energy over the busy parts / busy time), the
mean power, and the SM clock at each busy part's end. The question: does the power
inside the windows predict how far the work per busy second runs ahead of full duty?
"""
import argparse
import ctypes
import json
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--out")
ap.add_argument("--secs", type=float, default=4.0)
ap.add_argument("--duties", default="1.0,0.25,0.5,0.75,1.0")
a = ap.parse_args()

nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0


def energy_mj():
    v = ctypes.c_ulonglong()
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(v)) == 0
    return v.value


def sm_mhz():
    v = ctypes.c_uint()
    nvml.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(v))
    return v.value


lim = ctypes.c_uint()
nvml.nvmlDeviceGetEnforcedPowerLimit(dev, ctypes.byref(lim))
limit_w = lim.value / 1000.0


def workload(kind):
    if kind.startswith("gemm"):
        n = int(kind[4:])
        x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)

        def step():
            for _ in range(4):
                torch.matmul(x, y)
            torch.cuda.synchronize()
            return 4
        return step
    src = torch.empty(1 << 28, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)

    def step():
        for _ in range(4):
            dst.copy_(src)
        torch.cuda.synchronize()
        return 4
    return step


def run(step, duty, secs, period=0.2):
    work, busy, e_busy, clocks = 0, 0.0, 0, []
    t_start, e_start = time.monotonic(), energy_mj()
    t = t_start
    while t - t_start < secs:
        p_end = t + period
        b0, e0 = time.monotonic(), energy_mj()
        while time.monotonic() - b0 < duty * period:
            work += step()
        clocks.append(sm_mhz())
        b1, e1 = time.monotonic(), energy_mj()
        busy += b1 - b0
        e_busy += e1 - e0
        now = time.monotonic()
        if duty < 1.0 and p_end > now:
            time.sleep(p_end - now)
        t = time.monotonic() if duty < 1.0 else max(p_end, time.monotonic())
    wall, e_all = time.monotonic() - t_start, energy_mj() - e_start
    clocks.sort()
    return {"duty_set": duty, "duty": busy / wall, "work_per_s": work / wall, "work_per_busy_s": work / busy,
            "power_busy_w": e_busy / 1000.0 / busy, "power_mean_w": e_all / 1000.0 / wall,
            "sm_mhz_median": clocks[len(clocks) // 2]}


rows = []
for kind in ("gemm8192", "gemm4096", "copy"):
    step = workload(kind)
    run(step, 1.0, 1.0)
    full = None
    for d in [float(x) for x in a.duties.split(",")]:
        r = run(step, d, a.secs)
        r["kind"] = kind
        if d == 1.0 and full is None:
            full = r
        r["of_full"] = r["work_per_s"] / full["work_per_s"]
        r["busy_rate_of_full"] = r["work_per_busy_s"] / full["work_per_busy_s"]
        r["power_busy_of_full"] = r["power_busy_w"] / full["power_busy_w"]
        rows.append(r)
        print(json.dumps(r), flush=True)
    del step
    torch.cuda.empty_cache()

print(f"\npower limit {limit_w:.0f} W\n")
print("| workload | duty | of full duty | work per busy s / full | W in the windows | / full | W mean | SM MHz |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['kind']} | {r['duty']:.2f} | {r['of_full']:.3f} | {r['busy_rate_of_full']:.3f} | "
          f"{r['power_busy_w']:.0f} | {r['power_busy_of_full']:.3f} | {r['power_mean_w']:.0f} | {r['sm_mhz_median']} |")
if a.out:
    with open(a.out, "w") as f:
        json.dump({"limit_w": limit_w, "rows": rows}, f, indent=1)
