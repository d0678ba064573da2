"""Session 21: what gpuslice costs a host-bound eager PyTorch loop, in turns: each
variant a fresh process pinned to one CPU, the variants in rotated order per turn, the
ratio to native in the same turn.

  python3 eager_turns.py --gpuslice build-s21-minimal/gpuslice --out turns.json [--turns 3]
Variants: native; mem (gpuslice run --memory 24Gi); crit (+ --critical); crit_noprime
(--critical --prime off); share (--compute 100); preload (the interposer preloaded with no
slice: pass-through).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--gpuslice", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--turns", type=int, default=3)
ap.add_argument("--cpu", default="3")
ap.add_argument("--variants", default="native,mem,crit,crit_noprime,share,preload")
ap.add_argument("--work", default="decode:1:40:8,bert:1:300,train:32:4")
a = ap.parse_args()
gs = os.path.abspath(a.gpuslice)
lib = os.path.join(os.path.dirname(gs), "libgpuslice.so")
PRE = {"native": [], "mem": [gs, "run", "--memory", "24Gi", "--"],
       "crit": [gs, "run", "--memory", "24Gi", "--critical", "--"],
       "crit_noprime": [gs, "run", "--memory", "24Gi", "--critical", "--prime", "off", "--"],
       "share": [gs, "run", "--memory", "24Gi", "--compute", "100", "--"],
       "preload": ["env", "LD_PRELOAD=" + lib]}
variants = a.variants.split(",")
res = {"runs": []}
for work in a.work.split(","):
    parts = work.split(":")
    for turn in range(a.turns):
        order = variants[turn % len(variants):] + variants[:turn % len(variants)]
        row = {"work": work, "turn": turn}
        for v in order:
            cmd = ["taskset", "-c", a.cpu] + PRE[v] + [sys.executable, os.path.join(HERE, "eager_request.py")] + parts
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            line = [x for x in p.stdout.splitlines() if x.startswith("{")]
            row[v] = json.loads(line[-1]) if line else {"error": p.stderr[-600:]}
        res["runs"].append(row)
        print(json.dumps(row), flush=True)
        json.dump(res, open(a.out, "w"), indent=1)
summary = {}
for work in a.work.split(","):
    rows = [r for r in res["runs"] if r["work"] == work]
    key = "steps_per_s" if work.startswith("train") else "p50_ms"
    for v in variants:
        ratios = [r[v][key] / r["native"][key] for r in rows if key in r.get(v, {}) and key in r["native"]]
        if ratios:
            summary[f"{work} {v}"] = {"median_ratio_to_native": round(statistics.median(ratios), 4),
                                      "ratios": [round(x, 4) for x in ratios]}
res["summary"] = summary
json.dump(res, open(a.out, "w"), indent=1)
for k, v in summary.items():
    print(k, v)
