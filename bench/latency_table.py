"""Markdown tables of bench/latency.py results (one or more JSON files).

  python3 bench/latency_table.py curve.json [more.json ...]

Per variant, batch and think time: A's busy fraction with B, A's p99 alone and with B
(pooled over the phases), the p99 ratio against the variant's own A-alone phases and
against the native variant's (the reference: no gpuslice, no MPS), and B's
throughput while A runs against native B alone. A file without a native variant takes
the native reference of another file with the same batch and think time (marked *).
"""
import json
import os
import statistics
import sys


def key(r, t):
    """What a native reference must share with a variant: A's model, batch, graph mode,
    and its think time and their distribution."""
    return a_label(r), r["batch"], r.get("graph", False), r.get("think_dist", "fixed"), t


def bkey(r):
    """What B's native reference must share with a variant: its job, and the GEMM's size
    and group or the training batch."""
    if r.get("b_job", "gemm") == "train":
        return "train", r.get("train_batch")
    return r.get("size"), r.get("b_group", 4)


def a_label(r):
    """A's model as the tables name it (bench/workloads.py): resnet50, bert/SEQ,
    decode/TOKENS."""
    m = r.get("a_model", "resnet50")
    return m + (f"/{r.get('seq')}" if m == "bert" else f"/{r.get('tokens')}" if m == "decode" else "")


def b_label(r):
    """B's job as the tables name it: gemm SIZE (xGROUP), or train BATCH."""
    if r.get("b_job", "gemm") == "train":
        return f"train {r.get('train_batch')}"
    return f"gemm {r.get('size')}" + (f" x{r.get('b_group')}" if r.get("b_group", 4) != 4 else "")


def short(c):
    """Why a variant's phases measured less than they say ('' where nothing): a tenant still
    setting up when the schedule began leaves phases empty and B-alone phases at 0, and
    the busy start-up it catches up with lands in the phases after."""
    why = []
    if c.get("empty_phases"):
        why.append(f"{len(c['empty_phases'])} empty phase(s)")
    late = {k: v for k, v in c.get("ready_late_s", {}).items() if v > 0}
    if late:
        why.append("set up " + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(late.items()))
                   + " after the start")
    elif c.get("b_alone") and min(c["b_alone"]) == 0:
        why.append("a B-alone phase at 0")
    return "; ".join(why)


def cells(paths):
    """One dict per (file, variant, think time) with the ratios the table shows, and B's
    native solo rate they are against."""
    runs = [(p, json.load(open(p))) for p in paths]
    native_alone = {}  # (batch, graph, think distribution, think) -> (p99, file)
    native_b = {}  # (B's matmul size, group) -> the native variants' best B-alone phases
    for path, r in runs:
        nat = r["configs"].get("native")
        if nat and "thinks" in nat:
            native_b.setdefault(bkey(r), []).append(max(nat["b_alone"]))
            for t, v in nat["thinks"].items():
                native_alone.setdefault(key(r, t), (v["alone"]["p99"], path))
    b_refs = {k: statistics.median(v) for k, v in native_b.items()}
    out = []
    for path, r in runs:
        for name, c in r["configs"].items():
            if "thinks" not in c:
                continue
            for t, v in c["thinks"].items():
                ref, src = native_alone.get(key(r, t), (None, None))
                nan = float("nan")
                out.append({
                    "path": path, "batch": r["batch"], "graph": r.get("graph", False), "variant": name,
                    "workloads": f"{a_label(r)} / {b_label(r)}",
                    "think": float(t),
                    "think_label": ("~" if r.get("think_dist") == "exp" else "") + t, "busy": v["with_b"]["busy"], "p99_alone": v["alone"]["p99"],
                    "p99_with_b": v["with_b"]["p99"],
                    "p99_own": v["with_b"]["p99"] / v["alone"]["p99"] if v["alone"]["p99"] else nan,
                    "p99_native": v["with_b"]["p99"] / ref if ref else nan, "native_elsewhere": src != path,
                    "p50_own": v["with_b"]["p50"] / v["alone"]["p50"] if v["alone"].get("p50") else nan,
                    "b_fraction": v["b_rate"] / b_refs[bkey(r)] if bkey(r) in b_refs else nan,
                    "short": short(c)})
    b_ref = next(iter(b_refs.items())) if len(b_refs) == 1 else None  # (bkey, rate)
    return out, b_ref, any(r.get("graph") for _, r in runs)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    rows, b_ref, graph = cells(sys.argv[1:])
    kinds = {c["workloads"] for c in rows}
    # an A / B column where the files are not all the one ResNet-50 beside the one GEMM loop
    more = len(kinds) > 1 or not all(k.startswith("resnet50 / gemm") for k in kinds)
    print("| batch | variant | think ms | A busy | A p99 alone (own) ms | A p99 with B ms | p99 / own alone "
          "| p99 / native alone | p50 / own alone | B / native solo |" + (" A / B |" if more else ""))
    print("|---|---|---|---|---|---|---|---|---|---|" + ("---|" if more else ""))
    for c in sorted(rows, key=lambda x: (x["workloads"], -x["batch"], x["think"], x["variant"])):
        mark = "*" if c["native_elsewhere"] else ""
        print(f"| {c['batch']} | {c['variant']}{' !' if c['short'] else ''} | {c['think_label']} | {c['busy']:.2f} | {c['p99_alone']:.2f} "
              f"| {c['p99_with_b']:.2f} | {c['p99_own']:.2f} | {c['p99_native']:.2f}{mark} | {c['p50_own']:.2f} "
              f"| {c['b_fraction']:.2f} |" + (f" {c['workloads']} |" if more else ""))
    shorts = sorted({(c["variant"], c["path"], c["short"]) for c in rows if c["short"]})
    if shorts:
        print("\nVariants marked ! started late (raise --lead): their rows measure fewer requests, "
              "and the phases after the late start carry its load:")
        for name, path, why in shorts:
            print(f"- {name} ({os.path.basename(path)}): {why}")
    if any(c["think_label"].startswith("~") for c in rows):
        print("\nThink times marked ~ are drawn from an exponential distribution with that mean "
              "(requests at random).")
    if graph:
        print("\nA replays the model as a CUDA graph in the files that say so (`graph`); their native "
              "reference is a native variant that did too.")
    runs = [json.load(open(p)) for p in sys.argv[1:]]  # for the B-alone and clock tables
    b_alone = [(r, n, c["b_alone"]) for r in runs for n, c in r["configs"].items() if c.get("b_alone")]
    nat_b = {}
    for r, n, v in b_alone:
        if n == "native":
            nat_b[bkey(r)] = max(v)
    if any(n != "native" for _, n, _ in b_alone) and nat_b:
        print("\nB alone (A's process idle beside it; best B-alone phase), against native B alone "
              "with the same job (matmul size and group, or training batch):\n")
        print("| B matmul size or job | group or batch | variant | B alone, per s | / native |")
        print("|---|---|---|---|---|")
        for r, n, v in b_alone:
            ref = nat_b.get(bkey(r))
            a, b = bkey(r)
            print(f"| {a} | {b} | {n} | {max(v):.0f} | " + (f"{max(v) / ref:.2f} |" if ref else "– |"))
    clocks = [(r, n, c["smi"]) for r in runs for n, c in r["configs"].items() if isinstance(c.get("smi"), dict) and "error" not in c["smi"]]
    if clocks:
        print("\nThe GPU's SM clock and power (medians of nvidia-smi samples every 50 ms inside the phases):\n")
        print("| batch | variant | think ms | MHz A alone | MHz A with B | MHz B alone | W A alone | W A with B "
              "| W B alone |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r, n, smi in clocks:
            b = smi.get("B@0", {})
            for t in r["thinks"].split(","):
                a, ab = smi.get(f"A@{float(t):g}", {}), smi.get(f"AB@{float(t):g}", {})
                lab = ("~" if r.get("think_dist") == "exp" else "") + t
                print(f"| {r['batch']} | {n} | {lab} | {a.get('sm_mhz', 0):.0f} | {ab.get('sm_mhz', 0):.0f} "
                      f"| {b.get('sm_mhz', 0):.0f} | {a.get('power_w', 0):.0f} | {ab.get('power_w', 0):.0f} "
                      f"| {b.get('power_w', 0):.0f} |")
    print(f"\nB's native solo throughput (median of the native variants' best B-alone phase): "
          f"{b_ref[1]:.0f} {'steps' if b_ref[0][0] == 'train' else 'matmuls'}/s" if b_ref
          else "\nB's native solo throughput differs with its matmul size "
          "and group: each row's B is against the native B alone of its own (table above).")
