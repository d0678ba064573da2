"""The power-duty run as a figure: B alone's SM clock and power against its throughput
(of its own at full duty), from bench/h200_power_duty.py's JSON. Needs matplotlib
(Debian: python3-matplotlib).

  python3 bench/power_duty_figure.py DUTY.json OUT.svg
"""
import json
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

if len(sys.argv) != 3:
    sys.exit(__doc__)
r = json.load(open(sys.argv[1]))
rows = r["rows"]
half = len(rows) // 2
matplotlib.rcParams["svg.hashsalt"] = "gpuslice"  # the same data gives the same file
fig, ax = plt.subplots(figsize=(6.4, 4.4))
pw = ax.twinx()
for part, label, mark in ((rows[:half], "duties going down", "o"), (rows[half:], "going up", "s")):
    f = [x["fraction"] for x in part]  # of B's rate at full duty, as the run computed it
    ax.plot(f, [x["sm_mhz"] for x in part], marker=mark, color="tab:blue", lw=1, label=f"SM clock, {label}")
    pw.plot(f, [x["power_w"] for x in part], marker=mark, color="tab:red", lw=1, ls="--",
            label=f"power, {label}")
ax.axvline(0.75, color="tab:green", lw=1)
ax.text(0.755, 1560, "goal: B ≥ 0.75", color="tab:green", fontsize=8)
ax.axhline(1980, color="grey", lw=0.6, ls=":")
ax.text(0.41, 1990, "A alone: 1,980 MHz", color="grey", fontsize=8)
pw.axhline(700, color="tab:red", lw=0.6, ls=":")
ax.set_xlabel("B's throughput, of its own at full duty")
ax.set_ylabel("SM clock, MHz (median)", color="tab:blue")
pw.set_ylabel("power, W (median)", color="tab:red")
ax.set_ylim(1450, 2050)
pw.set_ylim(400, 720)
ax.set_title(f"B alone ({r['size']} bf16 GEMMs, groups of {r['group']}) at set duty cycles, "
             f"{r.get('gpu', '')}", fontsize=9)
h1, l1 = ax.get_legend_handles_labels()
h2, l2 = pw.get_legend_handles_labels()
ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="lower left")
fig.tight_layout()
fig.savefig(sys.argv[2], metadata={"Date": None})
