"""The latency curve as a figure: A's p99 (against its own alone phases) versus B's
throughput (against native B alone), one line per variant through A's think times, from
bench/latency.py results. Needs matplotlib.

  python3 bench/latency_figure.py OUT.svg "TITLE" FILE.json [FILE.json ...] [-- "TITLE" FILE.json ...]

Each "--"-separated group is one panel; its ratios use that group's native reference. The
green box marks the goal: A's p99 within 1.05x of alone with B at 75 % or more.
"""
import os
import sys

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if len(sys.argv) > 1 else 2)

import matplotlib  # noqa: E402

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from latency_table import cells  # noqa: E402

out, groups, cur = sys.argv[1], [], []
for a in sys.argv[2:] + ["--"]:
    if a == "--":
        if cur:
            groups.append((cur[0], cur[1:]))
        cur = []
    else:
        cur.append(a)
if not groups:
    sys.exit(__doc__)
matplotlib.rcParams["svg.hashsalt"] = "gpuslice"  # the same data gives the same file
fig, axes = plt.subplots(1, len(groups), figsize=(6.2 * len(groups), 4.8), squeeze=False)
for ax, (title, paths) in zip(axes[0], groups):
    rows, _, _ = cells(paths)
    series = {}
    for c in rows:
        tag = f"{c['variant']} b{c['batch']}" + (f" ({os.path.basename(os.path.dirname(c['path']))})"
                                                   if len({os.path.dirname(p) for p in paths}) > 1 else "")
        series.setdefault(tag, []).append(c)
    ax.add_patch(plt.Rectangle((0.75, 0.8), 0.3, 0.25, color="tab:green", alpha=0.12, lw=0))
    ax.text(0.76, 0.82, "goal at A busy ≤ 70 %:\nB ≥ 0.75, p99 ≤ 1.05×", fontsize=7, color="tab:green")
    ax.axhline(1.05, color="tab:green", lw=0.8, ls="--")
    for tag, pts in sorted(series.items()):
        pts.sort(key=lambda c: c["think"])
        line, = ax.plot([c["b_fraction"] for c in pts], [c["p99_own"] for c in pts], marker="o", ms=4,
                        lw=1, label=tag)
        for c in pts:
            ax.annotate(f"{c['busy']:.0%}", (c["b_fraction"], c["p99_own"]), fontsize=6,
                        textcoords="offset points", xytext=(3, 3), color=line.get_color())
    ax.set_xlim(0, 1.0)
    ax.set_ylim(0.8, max(2.0, max(c["p99_own"] for c in rows) + 0.1))
    ax.set_xlabel("B's throughput / native B alone")
    ax.set_ylabel("A's p99 / its own alone")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="upper left")
fig.text(0.01, 0.01, "labels: A busy with B; one line per variant, through A's think times",
         fontsize=6)
fig.tight_layout()
fig.savefig(out, metadata={"Date": None})
print(out)
