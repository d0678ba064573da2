"""Issue 6, session 7: how much GEMM throughput can the GPU run and still hold A's clock?

  python3 bench/h200_power_duty.py [--out results.json] [--size 4096] [--secs 3]

Sessions 6 and 7 found A's p99 next to B bounded by the SM clock: B alone draws the H200's
700 W power limit at ~1,530 MHz, A alone runs at 1,980 MHz, and with B in A's gaps A's
requests run at the lower clock the power controller set for the mix. The issue's goal
asks for B at >= 75 % of its solo throughput. Here B runs alone, no gpuslice, at a set
duty cycle: a group of 4 bf16 GEMMs and a synchronisation, then a sleep that makes the
busy time the given fraction of the wall time. Per duty: B's throughput against its own
at full duty, and the median SM clock and power (nvidia-smi every 50 ms). The duties run
downwards, then upwards again (the power controller keeps a running average). If B at
the throughput the goal asks for runs below 1,980 MHz on its own, a request of A's that
lands in it runs slower too, whatever the scheduler.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h200_common import Sampler  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--out")
ap.add_argument("--size", type=int, default=4096)
ap.add_argument("--group", type=int, default=4, help="GEMMs between synchronisations")
ap.add_argument("--secs", type=float, default=3.0, help="seconds per duty, after a 0.5 s settling")
ap.add_argument("--duties", default="1.0,0.9,0.8,0.75,0.7,0.6,0.5,0.4")
args = ap.parse_args()


def phase(a, b, duty, secs):
    """B at this duty for 0.5 s + secs; counts over the last secs."""
    t_start = time.time()
    t_from, t_end = t_start + 0.5, t_start + 0.5 + secs
    counted, busy = 0, 0.0
    while True:
        t0 = time.time()
        for _ in range(args.group):
            a @ b
        torch.cuda.synchronize()
        t1 = time.time()
        if t1 > t_end:
            break
        if t0 >= t_from:
            counted += args.group
            busy += t1 - t0
        if duty < 1.0:
            time.sleep((t1 - t0) * (1.0 - duty) / duty)
    return {"duty_set": duty, "duty": busy / secs, "gemms_per_s": counted / secs, "t0": t_from, "t1": t_end}


def main():
    a = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    smi = Sampler()
    if smi.error:
        sys.exit(f"h200_power_duty: {smi.error}")
    time.sleep(1.0)
    duties = [float(x) for x in args.duties.split(",")]
    rows = []
    for d in duties + duties[::-1]:
        r = phase(a, b, d, args.secs)
        m = smi.medians([dict(r, tag="")], skip=0.0)[""]
        r["sm_mhz"], r["power_w"] = (m["sm_mhz"], m["power_w"]) if m["n"] else (None, None)
        rows.append(r)
        print(json.dumps(r), flush=True)
    smi.stop([])
    full = max(r["gemms_per_s"] for r in rows if r["duty_set"] == 1.0)
    print(f"\nB alone, {args.size} bf16 GEMMs in groups of {args.group}, at a set duty cycle "
          f"(full duty: {full:.0f} GEMMs/s)\n")
    print("| duty set | duty measured | GEMMs/s | / full duty | SM MHz | W |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        r["fraction"] = r["gemms_per_s"] / full if full else None
        print(f"| {r['duty_set']:.2f} | {r['duty']:.2f} | {r['gemms_per_s']:.0f} | {r['fraction']:.2f} | "
              f"{r['sm_mhz']} | {r['power_w']} |")
    if args.out:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "size": args.size, "group": args.group,
                   "gpu": torch.cuda.get_device_name(), "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
