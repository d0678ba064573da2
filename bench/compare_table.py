"""Old against new, from the measurements bench/compare.sh wrote: a markdown table (stdout)
and, with --json FILE, the same rows as JSON.

  python3 bench/compare_table.py OUT/raw [--json OUT/compare.json]

Per figure: the old and the new build's values (the mean over rounds, and each round),
their difference (new - old; for a plain quantity also new / old), what the figure may
move by between runs of the same build, and whether the difference stays within that.
What a figure may move by is the larger of a fixed allowance (the column "allowed") and
the spread the run itself shows between rounds of one build. The allowances come from
repeated H200 runs of the same build (docs/benchmarks.md): memory byte counts exactly, the
process's NVML figure 2 MiB, launch overhead 0.1 us, an allocation pair 3 %, context
start-up 5 ms, a share 1.5 points, a p99 or p50 ratio 0.05, the best-effort tenant's
throughput 0.05 of its solo.
"""
import glob
import json
import os
import statistics
import sys

ALLOW = {"bytes": 0, "nvml": 2 << 20, "launch_us": 0.1, "alloc_ratio": 0.03, "startup_ms": 5.0,
         "share": 1.5, "ratio": 0.05, "fraction": 0.05, "flag": 0}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def memory_rows(raw):
    runs = {b: load(os.path.join(raw, f"memory-{b}.json")) for b in ("old", "new")}
    if not all(runs.values()):
        return []
    rows = []
    for conf in runs["old"].get("allocators", {}):
        cells = {b: runs[b].get("allocators", {}).get(conf, {}) for b in runs}
        rows.append(("memory cap", f"{conf}: bytes PyTorch got under the cap", "bytes",
                     {b: [c.get("allocated_bytes")] for b, c in cells.items()}))
        rows.append(("memory cap", f"{conf}: every refusal a clean OutOfMemoryError", "flag",
                     {b: [int(bool(c.get("clean_oom")))] for b, c in cells.items()}))
        rows.append(("memory cap", f"{conf}: the process's device memory (NVML)", "nvml",
                     {b: [c.get("nvml_process_bytes")] for b, c in cells.items()}))

    def worker_ok(r):
        out = r.get("two_tenants", {}).get("worker", {}).get("out", "")
        return int('"work_ok": true' in out)

    def overflow_clean(r):
        out = r.get("two_tenants", {}).get("overflowing", {}).get("out", "")
        return int('"clean_oom": true' in out)

    if all("two_tenants" in r for r in runs.values()):
        rows.append(("memory cap", "two tenants: the overflowing one refused cleanly", "flag",
                     {b: [overflow_clean(r)] for b, r in runs.items()}))
        rows.append(("memory cap", "two tenants: the other's work correct", "flag",
                     {b: [worker_ok(r)] for b, r in runs.items()}))
    if all("nvidia_smi_inside" in r for r in runs.values()):
        rows.append(("memory cap", "nvidia-smi inside the slice (same text)", "flag",
                     {b: [int(r["nvidia_smi_inside"] == runs["old"]["nvidia_smi_inside"])] for b, r in runs.items()}))
    return rows


def overhead_rows(raw):
    per = {"old": [], "new": []}
    for path in sorted(glob.glob(os.path.join(raw, "overhead-*-*.json"))):
        b = os.path.basename(path).split("-")[1]
        r = load(path)
        if r and b in per:
            per[b].append(r["summary"])
    if not per["old"] or not per["new"]:
        return []

    def pick(section, key):
        return {b: [s.get(section, {}).get(key) for s in v] for b, v in per.items()}

    inproc = per["new"][0].get("inproc", {})
    slice_ = (f" (a {inproc['compute_share']} % share)" if inproc.get("compute_share") else
              " (critical)" if inproc.get("critical") else
              " (beside a critical tenant)" if inproc.get("critical_peer") else "")
    return [("overhead", f"launch, in one process{slice_}: hooked - libcuda (us)", "launch_us",
             pick("inproc", "launch_delta_us")),
            ("overhead", "1 MiB alloc + free pair, in one process: hooked / libcuda", "alloc_ratio",
             pick("inproc", "alloc_pair_ratio")),
            ("overhead", "launch, enforcing slice - native, processes (us)", "launch_us",
             pick("gpuslice", "launch_delta_us")),
            ("overhead", "context start-up, enforcing slice - native (ms)", "startup_ms",
             pick("gpuslice", "startup_delta_ms"))]


def shares_rows(raw):
    r = load(os.path.join(raw, "shares.json"))
    if not r or "old" not in r.get("builds", {}) or "new" not in r["builds"]:
        return []
    rows = []
    old, new = r["builds"]["old"], r["builds"]["new"]
    for pair in old["pairs"]:
        for i, share in enumerate(pair.split("/")):
            rows.append(("compute shares", f"pair {pair}: the {share} % tenant's throughput, % of solo", "share",
                         {b: [x.get("achieved", [None, None])[i] for x in v["pairs"].get(pair, [])]
                          for b, v in (("old", old), ("new", new))}))
    for cap in old["caps"]:
        for what, key in (("throughput", "achieved"), ("GPU time", "gpu_time")):
            rows.append(("hard caps", f"cap {cap}: {what}, % of solo", "share",
                         {b: [x.get(key) for x in v["caps"].get(cap, [])] for b, v in (("old", old), ("new", new))}))
    return rows


def latency_rows(raw):
    r = load(os.path.join(raw, "latency.json"))
    if not r or "summary" not in r:
        return []
    cells = {}
    for row in r["summary"]:
        name = row["config"].partition("#")[0]
        build = name.partition("@")[2]
        if build in ("old", "new"):
            cells.setdefault(row["think_ms"], {"old": [], "new": []})[build].append(row)
    rows = []
    for think in sorted(cells):
        c = cells[think]
        for what, key, kind in (("critical p99 / its own alone", "p99_ratio_own", "ratio"),
                                ("critical p50 / its own alone", "p50_ratio_own", "ratio"),
                                ("best-effort throughput / native solo", "B_fraction_native", "fraction")):
            rows.append(("latency-critical class", f"think {think:g} ms: {what}", kind,
                         {b: [x.get(key) for x in c[b]] for b in c}))
    return rows


def judge(claim, what, kind, values):
    """One row: means, difference, allowance, verdict."""
    vals = {b: [v for v in values.get(b, []) if v is not None] for b in ("old", "new")}
    row = {"claim": claim, "figure": what, "kind": kind, "old": vals["old"], "new": vals["new"]}
    if not vals["old"] or not vals["new"]:
        row["same"] = None
        return row
    mo, mn = statistics.mean(vals["old"]), statistics.mean(vals["new"])
    spread = max(max(v) - min(v) for v in vals.values())
    allowed = max(ALLOW[kind], spread)
    row.update({"old_mean": mo, "new_mean": mn, "diff": mn - mo, "ratio": mn / mo if mo else None,
                "allowed": allowed, "same": abs(mn - mo) <= allowed + 1e-12})
    return row


def fmt(v, kind):
    if v is None:
        return "–"
    if kind in ("bytes", "nvml"):
        return f"{v:,.0f}"
    if kind == "flag":
        return "yes" if v else "no"
    return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"


def main():
    args = [a for a in sys.argv[1:]]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    raw, out_json = args[0], None
    if "--json" in args:
        out_json = args[args.index("--json") + 1]
    rows = [judge(*x) for x in memory_rows(raw) + overhead_rows(raw) + shares_rows(raw) + latency_rows(raw)]
    info = open(os.path.join(raw, "info.txt")).read().strip() if os.path.exists(os.path.join(raw, "info.txt")) else ""
    print("# Old build against new\n")
    for line in info.splitlines():
        print(f"- {line}")
    print("\n| claim | figure | old | new | new − old | new / old | allowed | same? |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        k = r["kind"]
        rounds = lambda b: " / ".join(fmt(v, k) for v in r[b]) if len(r[b]) > 1 else ""  # noqa: E731
        old = fmt(r.get("old_mean"), k) + (f" ({rounds('old')})" if rounds("old") else "")
        new = fmt(r.get("new_mean"), k) + (f" ({rounds('new')})" if rounds("new") else "")
        ratio = f"{r['ratio']:.3f}" if r.get("ratio") is not None and k not in ("flag",) else "–"
        same = {True: "yes", False: "**NO**", None: "not measured"}[r["same"]]
        diff = fmt(r.get("diff"), k) if k != "flag" else "–"
        print(f"| {r['claim']} | {r['figure']} | {old} | {new} | {diff} | {ratio} "
              f"| {fmt(r.get('allowed'), k) if k != 'flag' else 'none'} | {same} |")
    judged = [r for r in rows if r["same"] is not None]
    moved = [r for r in judged if not r["same"]]
    print(f"\n{len(judged) - len(moved)} of {len(judged)} figures within what a run of one build moves by"
          + (f"; outside: {', '.join(r['figure'] for r in moved)}." if moved else "."))
    missing = [name for name, got in (("memory", memory_rows(raw)), ("overhead", overhead_rows(raw)),
                                      ("shares", shares_rows(raw)), ("latency", latency_rows(raw))) if not got]
    if missing:
        print(f"Not measured in this run: {', '.join(missing)}.")
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"info": info, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
