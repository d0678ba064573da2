"""Issue 20's matrix of the latency-critical class, in as few device calls as it takes.

Cells: A {graph, eager} x batch {1, 8} x B's GEMM size {4096, 8192}, each with A's think
times {0, 2, 6, 10} ms; in every cell the baselines (native time-slicing, raw MPS with B at
30 % and 50 % of the threads) and gpuslice's variants run side by side in one latency.py
run, so every ratio is within one run.

  python3 bench/latency_matrix.py plan [--budget 540] [--configs ...] [--requests 400]
      the device calls: each a list of latency.py runs (one per cell) whose estimated
      time fits the budget of one call; with --shell, each call as one command line
  python3 bench/latency_matrix.py run --call N --gpuslice G --outdir DIR [--pin 2-5/8-11]
      runs call N of the same plan (on the GPU machine): one JSON per cell in DIR
  python3 bench/latency_matrix.py table DIR... [--configs native,gs_defaults,...]
      per cell and think time: A's p99 against its own alone and B against native B
      alone for every variant; the best baseline on each axis; the gpuslice variants
      at least as good as that on both axes at once (or none); per gpuslice variant the
      baselines it is at least as good as on both axes; and the goal where A is busy at
      most half the time (A <= 1.05x with B >= 75 %). A run without a native variant
      takes its B fraction from the native B alone of the same size in the nearest run.
  python3 bench/latency_matrix.py figure OUT.svg DIR... [--configs ...]
      the same as a figure (needs matplotlib): one panel per cell, A's p99 ratio
      against B's share, one line per variant through A's think times

Every run's own figures come from latency.py (see its --help); this only plans, runs and
reads them.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

KINDS = ("graph", "eager")
BATCHES = (1, 8)
SIZES = (4096, 8192)
THINKS = (0, 2, 6, 10)
BASELINES = ("native", "mps_t30", "mps_t50")
GPUSLICE = ("gs_defaults", "gs_mps_guard", "gs_mps_t50")
# A's request in ms, for the estimate only (H200, ResNet-50 fp16; bench/archive/results).
REQUEST_MS = {("graph", 1): 1.0, ("graph", 8): 1.5, ("eager", 1): 5.0, ("eager", 8): 9.0}
LEAD_S, B_PHASES_S, MPS_START_S = 10.0, 3 * 2.5, 5.0


def cells():
    return [(k, b, n) for k in KINDS for b in BATCHES for n in SIZES]


def cell_name(kind, batch, size):
    return f"{kind}-b{batch}-n{size}"


def estimate_s(kind, batch, configs, thinks, reps, requests):
    """latency.py's wall time for one cell: per variant its lead, B's alone phases and,
    per think time, reps pairs of phases of `requests` requests each."""
    req = REQUEST_MS[(kind, batch)]
    per_variant = LEAD_S + B_PHASES_S + sum(2 * reps * requests * (req + t) / 1000.0 for t in thinks)
    mps = any("mps" in c for c in configs)
    return len(configs) * per_variant + (MPS_START_S if mps else 0.0)


def plan(a):
    """Cells packed into calls of at most a.budget seconds, in order; a cell whose
    variants alone exceed the budget is split into runs of fewer variants."""
    configs = a.configs.split(",")
    thinks = [float(t) for t in a.thinks.split(",")]
    runs = []
    for kind, batch, size in cells():
        chunk = []
        for c in configs:
            if chunk and estimate_s(kind, batch, chunk + [c], thinks, a.reps, a.requests) > a.budget:
                runs.append((kind, batch, size, chunk))
                chunk = []
            chunk.append(c)
        runs.append((kind, batch, size, chunk))
    calls, cur, cur_s = [], [], 0.0
    for r in runs:
        s = estimate_s(r[0], r[1], r[3], thinks, a.reps, a.requests)
        if cur and cur_s + s > a.budget:
            calls.append((cur, cur_s))
            cur, cur_s = [], 0.0
        cur.append(r)
        cur_s += s
    if cur:
        calls.append((cur, cur_s))
    return calls


def command(a, run, outdir, part):
    kind, batch, size, configs = run
    name = cell_name(kind, batch, size) + (f"-{part}" if part else "")
    cmd = [sys.executable, os.path.join(HERE, "latency.py"), "--gpuslice", a.gpuslice or "GPUSLICE",
           "--batch", str(batch), "--size", str(size), "--thinks", a.thinks, "--reps", str(a.reps),
           "--requests", str(a.requests), "--configs", ",".join(configs),
           "--out", os.path.join(outdir, name + ".json")]
    if kind == "eager":
        cmd.append("--eager")
    if a.pin:
        cmd += ["--pin", a.pin]
    return cmd


def numbered(call):
    """Each run of a call with a part number where a cell was split."""
    seen = {}
    for r in call:
        key = r[:3]
        seen[key] = seen.get(key, 0) + 1
    count = {}
    for r in call:
        key = r[:3]
        count[key] = count.get(key, 0) + 1
        yield r, (count[key] if seen[key] > 1 else 0)


def cmd_plan(a):
    calls = plan(a)
    total = sum(s for _, s in calls)
    print(f"# {len(calls)} device call(s), about {total / 60:.0f} min of device time "
          f"(budget {a.budget:.0f} s a call)")
    for i, (call, s) in enumerate(calls):
        print(f"call {i}: about {s:.0f} s: " + "; ".join(
            f"{cell_name(*r[:3])} [{','.join(r[3])}]" for r in call))
        if a.shell:
            for r, part in numbered(call):
                print("  " + " ".join(command(a, r, a.outdir or "OUT", part)))


def cmd_run(a):
    calls = plan(a)
    if not 0 <= a.call < len(calls):
        sys.exit(f"latency_matrix: --call {a.call}: the plan has calls 0..{len(calls) - 1}")
    os.makedirs(a.outdir, exist_ok=True)
    rc = 0
    for r, part in numbered(calls[a.call][0]):
        print("# " + cell_name(*r[:3]) + ": " + ",".join(r[3]), flush=True)
        rc |= subprocess.call(command(a, r, a.outdir, part))
    return rc


def read_cells(dirs):
    """{(kind, batch, size): {think: {config: row}}} from latency.py's JSON files; where
    runs repeat a variant in a cell, the latest run's (by its date) is kept. A run
    without a native variant has no native B alone of its own: its rows' B fraction
    is taken against the native B alone of the same GEMM size from the run nearest in
    time (B alone does not depend on A), and the row says which (B_reference)."""
    found = []
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(d, "*.json"))):
            try:
                res = json.load(open(f))
            except (OSError, ValueError):
                continue
            if "summary" in res and "batch" in res:
                found.append(res)
    native_b = [(r.get("date", ""), r.get("size"), max(r["configs"]["native"]["b_alone"]))
                for r in found if (r.get("configs", {}).get("native") or {}).get("b_alone")]
    out = {}
    for res in sorted(found, key=lambda r: r.get("date", "")):
        key = ("graph" if res.get("graph") else "eager", res["batch"], res.get("size"))
        for row in res["summary"]:
            if row.get("B_fraction_native") is None or "configs" in res and "native" not in res["configs"]:
                row = rebased(row, res, native_b)
            out.setdefault(key, {}).setdefault(row["think_ms"], {})[row["config"]] = row
    return out


def when(date):
    try:
        return time.mktime(time.strptime(date, "%Y-%m-%d %H:%M:%S"))
    except (TypeError, ValueError):
        return 0.0


def rebased(row, res, native_b):
    """row with its B fraction against the nearest run's native B alone (same size)."""
    same = [(abs(when(d) - when(res.get("date"))), d, b) for d, size, b in native_b if size == res.get("size")]
    c = res.get("configs", {}).get(row["config"], {})
    rate = c.get("thinks", {}).get(f"{row['think_ms']:g}", {}).get("b_rate")
    row = dict(row)
    if not same or rate is None:
        row["B_fraction_native"] = None
        return row
    _, d, b = min(same)
    row["B_fraction_native"] = round(rate / b, 3)
    row["B_reference"] = f"native B alone of the run of {d}"
    return row


def base_name(config):
    return config.partition("@")[0].partition("#")[0]


def judge(rows):
    """The best baseline on each axis, the gpuslice variants at least as good on both
    (best first: lowest p99 ratio), and the goal where A is busy at most half the time."""
    rows = {c: r for c, r in rows.items() if r.get("B_fraction_native") is not None and
            r.get("p99_ratio_own") is not None}
    base = [r for c, r in rows.items() if base_name(c) in BASELINES]
    gs = {c: r for c, r in rows.items() if base_name(c).startswith("gs_")}
    if not base or not gs:
        return None
    best_p99 = min(r["p99_ratio_own"] for r in base)
    best_b = max(r["B_fraction_native"] for r in base)
    wins = sorted((c for c, r in gs.items() if r["p99_ratio_own"] <= best_p99 and r["B_fraction_native"] >= best_b),
                  key=lambda c: gs[c]["p99_ratio_own"])
    beats = {c: [b for b, rb in rows.items() if base_name(b) in BASELINES and
                 r["p99_ratio_own"] <= rb["p99_ratio_own"] and r["B_fraction_native"] >= rb["B_fraction_native"]]
             for c, r in gs.items()}
    busy = max(r["A_busy_alone"] for r in rows.values())
    goal = None
    if busy <= 0.5:
        goal = sorted((c for c, r in gs.items() if r["p99_ratio_own"] <= 1.05 and r["B_fraction_native"] >= 0.75),
                      key=lambda c: gs[c]["p99_ratio_own"])
    return {"best_p99": best_p99, "best_b": best_b, "wins": wins, "beats": beats, "busy": busy, "goal": goal}


def selected(a):
    """read_cells of a.dirs, only the variants a.configs names (all without it)."""
    data = read_cells(a.dirs)
    if not data:
        sys.exit("latency_matrix: no latency.py results in " + " ".join(a.dirs))
    if a.configs:
        keep = set(a.configs.split(","))
        data = {k: {t: {c: r for c, r in rows.items() if c in keep} for t, rows in cell.items()}
                for k, cell in data.items()}
    return data


def cmd_table(a):
    data = selected(a)
    configs = sorted({c for cell in data.values() for t in cell.values() for c in t})
    print("| A | batch | B size | think ms | A busy | " + " | ".join(configs) +
          " | best baseline (p99 / B) | gpuslice at least as good on both | baselines a gpuslice variant is at "
          "least as good as on both | A busy <= 50 %: A <= 1.05x, B >= 75 % |")
    print("|" + "---|" * (9 + len(configs)))
    for key in sorted(data, key=lambda k: (KINDS.index(k[0]) if k[0] in KINDS else 9, k[1], k[2] or 0)):
        for t in sorted(data[key]):
            rows = data[key][t]
            if not rows:
                continue
            j = judge(rows)
            cellv = [f"{rows[c]['p99_ratio_own']:.2f}x, {100 * rows[c]['B_fraction_native']:.0f} %"
                     if c in rows and rows[c]["p99_ratio_own"] is not None and
                     rows[c]["B_fraction_native"] is not None else "" for c in configs]
            if j is None:
                tail = ["", "", "", ""]
            else:
                goal = "n/a (A busier)" if j["goal"] is None else (", ".join(j["goal"]) or "**not met**")
                beats = "; ".join(f"{c}: {', '.join(b)}" for c, b in sorted(j["beats"].items()) if b)
                tail = [f"{j['best_p99']:.2f}x / {100 * j['best_b']:.0f} %",
                        ", ".join(j["wins"]) or "**none**", beats or "none", goal]
            busy = max(r["A_busy_alone"] for r in rows.values())
            print(f"| {key[0]} | {key[1]} | {key[2]} | {t:g} | {100 * busy:.0f} % | " +
                  " | ".join(cellv + tail) + " |")


def cmd_figure(a):
    """One panel per cell: A's p99 ratio against B's share, a line per variant through
    A's think times (labelled), the goal's box where A is busy at most half the time."""
    try:
        import matplotlib
        matplotlib.use("svg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("latency_matrix figure: needs matplotlib (Debian: apt install python3-matplotlib)")
    data = selected(a)
    keys = [k for k in cells() if k in data]
    matplotlib.rcParams["svg.hashsalt"] = "gpuslice"  # the same data gives the same file
    ncol = 4
    fig, axes = plt.subplots((len(keys) + ncol - 1) // ncol, ncol, figsize=(4.2 * ncol, 3.6 * ((len(keys) + 3) // 4)),
                             squeeze=False)
    colours = {}
    for ax, key in zip(axes.flat, keys):
        series = {}
        for t, rows in data[key].items():
            for c, r in rows.items():
                if r.get("B_fraction_native") is not None and r.get("p99_ratio_own") is not None:
                    series.setdefault(c, []).append((t, r["B_fraction_native"], r["p99_ratio_own"]))
        ax.add_patch(plt.Rectangle((0.75, 0.7), 0.3, 0.35, color="tab:green", alpha=0.12, lw=0))
        ax.axhline(1.05, color="tab:green", lw=0.8, ls="--")
        top, bottom = 1.2, 0.7
        for c in sorted(series):
            pts = sorted(series[c])
            colour = colours.setdefault(c, f"C{len(colours) % 10}")
            ax.plot([p[1] for p in pts], [p[2] for p in pts], marker="o", ms=3, lw=1, color=colour, label=c)
            for t, b, r in pts:
                ax.annotate(f"{t:g}", (b, r), fontsize=6, textcoords="offset points", xytext=(3, 2), color=colour)
            top = max(top, max(p[2] for p in pts))
            bottom = min(bottom, min(p[2] for p in pts) - 0.05)
        ax.set_xlim(-0.02, 1.05)
        ax.set_ylim(bottom, min(top + 0.1, 4.0))
        ax.set_title(cell_name(*key), fontsize=9)
        ax.grid(alpha=0.3)
        ax.set_xlabel("B / native B alone", fontsize=7)
        ax.set_ylabel("A's p99 / alone", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    handles = {c: plt.Line2D([], [], color=col, marker="o", ms=3, lw=1) for c, col in colours.items()}
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles), fontsize=7)
    fig.text(0.01, 0.01, "labels: A's think time, ms; green: the goal where A is busy at most half the time "
             "(A <= 1.05x, B >= 75 %)", fontsize=6)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(a.out, metadata={"Date": None})
    print(a.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("plan", "run"):
        p = sub.add_parser(name)
        p.add_argument("--budget", type=float, default=540.0, help="seconds of one device call")
        p.add_argument("--configs", default=",".join(BASELINES + GPUSLICE))
        p.add_argument("--thinks", default=",".join(str(t) for t in THINKS))
        p.add_argument("--reps", type=int, default=2)
        p.add_argument("--requests", type=int, default=400)
        p.add_argument("--gpuslice", default="")
        p.add_argument("--pin", default="")
        p.add_argument("--outdir", default="")
        if name == "plan":
            p.add_argument("--shell", action="store_true", help="print each call's command lines")
        else:
            p.add_argument("--call", type=int, required=True)
    for name in ("table", "figure"):
        p = sub.add_parser(name)
        if name == "figure":
            p.add_argument("out")
        p.add_argument("dirs", nargs="+")
        p.add_argument("--configs", default="", help="only these variants (comma-separated; default: every one)")
    a = ap.parse_args()
    if a.cmd == "run" and (not a.gpuslice or not a.outdir):
        sys.exit("latency_matrix run: --gpuslice and --outdir are needed")
    return {"plan": cmd_plan, "run": cmd_run, "table": cmd_table, "figure": cmd_figure}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
