"""The latency-critical class on a real GPU: a critical model's p99 next to a best-effort
GEMM loop, against the same model alone, with the loop's throughput against its own alone,
at several of the model's think times; variants side by side in one run.

  python3 bench/latency.py --gpuslice build-minimal/gpuslice --out curve.json
      [--configs native,gs_defaults] [--thinks 0,3,6,10] [--batch 8] [--pin 2-5/8-11] [--smi]
  python3 bench/latency_table.py curve.json

A is bench/compute_tenant.py infer: ResNet-50 (random weights, fp16) replayed as one CUDA
graph (--eager: launched op by op), a request then a think time; --a-model bert or decode
runs a BERT-base-sized encoder or a GPT-2-small-sized decoder's token loop instead
(bench/workloads.py). B is compute_tenant.py hog: bf16 --size matmuls, --b-group between
synchronisations; --b-job train runs ResNet-50 training steps instead. Per variant one pair of
processes follows a common wall-clock schedule of phases: B alone, then for each think time
--reps pairs of (A alone, A with B) in alternating order, B alone again in the middle and at
the end. A's p99 alone and with B then come from the same processes, seconds apart, so the
GPU's clock and the host's drift between runs do not enter the ratio; every ratio is also
given against the native variant's A alone and B alone (none in a run without `native`:
bench/latency_matrix.py then takes the native B alone of another run).

Variants (--configs, comma-separated):
  native           plain time-slicing, no gpuslice
  gs_defaults      gpuslice with its defaults: A --critical, B --compute 100 (best-effort;
                   on time-slicing: yield gate, the guard at its default margin, A's prime
                   at its default lead)
  gs_gate          A --critical --prime off, B --compute 100 --guard off (the gate alone)
  gs_guardN        gs_gate with B's guard at N microseconds (--guard N)
  gs_guardNpM      gs_guardN with A's prime M microseconds ahead (--prime M)
  gs_bound         A --critical --prime off, B --compute 100 --yield bound
  gs_capN          gs_gate with the guard at its default and B under --compute N --hard-cap
  gs_dcapN         gs_defaults with B under --compute N --hard-cap (a duty B cannot exceed)
  gs_pgN, gs_nopg  gs_defaults with B's power guard at N % of the maximum SM clock (B logs
                   each change of its duty: interposer_said), or off
  mps_t100, mps_t50, mps_t30 plain NVIDIA MPS, B at all threads / 50 % / 30 % active threads
  gs_mps_t100, gs_mps_t70, gs_mps_t50   gpuslice on MPS (--sharing mps): A critical, B
                   best-effort (yield bound, below-normal client priority), B's threads
  gs_mps_gate, gs_mps_gate_t70          the same with yield gate
  gs_mps_guard     gs_mps_gate with B's guard at 600 microseconds
  gs_mps_guard_pgN gs_mps_guard with B's power guard at N % of the maximum SM clock
  gs_mps_shrink, gs_mps_shrinkN         yield shrink: B on a green context of half the SMs
                   (or N) while A is busy
  CONFIG@NAME      CONFIG with both tenants under the build --build NAME=GPUSLICE gave
  CONFIG#TAG       CONFIG again, as a variant of its own (a second round of the same)
MPS variants start a private MPS control daemon (nvidia-cuda-mps-control).
Prints one JSON line per variant and think time as it goes; writes one JSON file, saved
after every variant.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import Sampler, finish_tenant, mps_control, mps_env, pct, start_tenant  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--gpuslice", required=True, help="the gpuslice binary of variants without @NAME")
ap.add_argument("--out", required=True, help="JSON file to write")
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--thinks", default="0,3,6,10", help="A's think times, ms")
ap.add_argument("--think-dist", choices=["fixed", "exp"], default="fixed",
                help="A's think times fixed, or exponential with that mean (requests at random)")
ap.add_argument("--reps", type=int, default=3, help="A-alone / A-with-B phase pairs per think time")
ap.add_argument("--requests", type=int, default=1000, help="A's requests at least, per think time and phase kind")
ap.add_argument("--est-ms", type=float, default=2.0,
                help="A's expected latency, to size the phases (about 2 for the graph at batch 8)")
ap.add_argument("--configs", default="native,gs_defaults", help="the variants (above), comma-separated")
ap.add_argument("--size", type=int, default=4096, help="B's matmul size")
ap.add_argument("--b-group", type=int, default=4, help="B's matmuls between synchronisations")
ap.add_argument("--a-model", choices=["resnet50", "bert", "decode"], default="resnet50",
                help="A's model (bench/workloads.py): ResNet-50, a BERT-base-sized encoder, or a "
                "GPT-2-small-sized decoder generating --tokens tokens per request")
ap.add_argument("--seq", type=int, default=128, help="--a-model bert: tokens per sequence")
ap.add_argument("--tokens", type=int, default=16, help="--a-model decode: tokens per request")
ap.add_argument("--b-job", choices=["gemm", "train"], default="gemm",
                help="B's job: the GEMM loop, or ResNet-50 training steps (bf16 autocast) at --train-batch")
ap.add_argument("--train-batch", type=int, default=32, help="--b-job train: images per step")
ap.add_argument("--pin", default="",
                help="A's and B's CPUs, e.g. 2-5/8-11 (compute_tenant.py --cpus); A also runs "
                "without garbage collection inside a phase")
ap.add_argument("--eager", action="store_true",
                help="A launches the model op by op, not as a CUDA graph (its tail is then the host's: "
                "an eager model's p99 alone moves by up to 2x between phases)")
ap.add_argument("--build", action="append", default=[], metavar="NAME=GPUSLICE",
                help="another gpuslice build (repeatable): CONFIG@NAME runs both tenants under it")
ap.add_argument("--memory", default="24Gi", help="each tenant's slice (gpuslice run --memory)")
ap.add_argument("--b-phase", type=float, default=2.5,
                help="seconds of each B-alone phase (a launch-bound B of small kernels varies by up to 25 %% "
                "between 2.5 s phases)")
ap.add_argument("--lead", type=float, default=10.0, help="seconds for both tenants to start up")
ap.add_argument("--first-lead", type=float,
                help="the same for the first variant, whose tenants start from a cold disk cache (default: "
                "--lead + 10; with --lead 10 alone the first variant lost its first A phases in 2 of 5 runs)")
ap.add_argument("--logs", metavar="DIR",
                help="keep each tenant's whole stderr (the interposer's log) as DIR/VARIANT.A.log and "
                ".B.log (the JSON keeps a few lines of it)")
ap.add_argument("--b-log-level", choices=["error", "warn", "info", "debug"],
                help="GPUSLICE_LOG_LEVEL of B in the gpuslice variants (default: info; debug says what "
                "B's pace learned, e.g. each kind of launch's GPU time, best with --logs)")
ap.add_argument("--smi", action="store_true",
                help="sample the GPU's SM clock and power every 50 ms (nvidia-smi) and give their "
                "medians per phase kind: does B's load slow A down through the clock?")
args = ap.parse_args()
if args.b_phase <= 0.3:
    ap.error("--b-phase must be longer than the 0.3 s at each phase's start that the tenants do not count")
TENANT = os.environ.get("GS_BENCH_TENANT", os.path.join(HERE, "compute_tenant.py"))  # tests: a stand-in

CONFIGS = {
    # name: (A's gpuslice args or None, B's, MPS underneath, B's extra environment)
    "native": (None, None, False, {}),
    "gs_defaults": (["--critical"], ["--compute", "100"], False, {}),
    "gs_gate": (["--critical", "--prime", "off"], ["--compute", "100", "--guard", "off"], False, {}),
    "gs_bound": (["--critical", "--prime", "off"], ["--compute", "100", "--yield", "bound"], False, {}),
    "mps_t100": (None, None, True, {}),
    "mps_t50": (None, None, True, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"}),
    "mps_t30": (None, None, True, {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30"}),
    "gs_mps_t100": (["--critical", "--sharing", "mps"], ["--compute", "100", "--sharing", "mps"], True, {}),
    "gs_mps_t70": (["--critical", "--sharing", "mps"],
                   ["--compute", "100", "--sharing", "mps", "--mps-threads", "70"], True, {}),
    "gs_mps_t50": (["--critical", "--sharing", "mps"],
                   ["--compute", "100", "--sharing", "mps", "--mps-threads", "50"], True, {}),
    "gs_mps_shrink": (["--critical", "--sharing", "mps"],
                      ["--compute", "100", "--sharing", "mps", "--yield", "shrink"], True, {}),
    "gs_mps_gate_t70": (["--critical", "--sharing", "mps"],
                        ["--compute", "100", "--sharing", "mps", "--mps-threads", "70", "--yield", "gate",
                         "--guard", "off"],
                        True, {}),
    "gs_mps_gate": (["--critical", "--sharing", "mps"],
                    ["--compute", "100", "--sharing", "mps", "--yield", "gate", "--guard", "off"], True, {}),
    "gs_mps_guard": (["--critical", "--sharing", "mps"],
                     ["--compute", "100", "--sharing", "mps", "--yield", "gate", "--guard", "600"], True, {}),
}


def config(name):
    """(A's gpuslice args or None, B's, MPS underneath, B's extra environment, the gpuslice
    binary) of a variant name, or None if it names none: CONFIG#TAG is CONFIG; CONFIG@NAME
    is CONFIG under the build --build gave NAME."""
    name = name.partition("#")[0]
    base, _, build = name.partition("@")
    builds = dict(x.split("=", 1) for x in args.build)
    c = base_config(base)
    if c is None or (build and build not in builds):
        return None
    return c + (os.path.abspath(builds[build]) if build else args.gpuslice,)


def base_config(name):
    """CONFIGS[name], a variant with its number in the name (gs_guardN[pM], gs_capN,
    gs_dcapN, gs_pgN, gs_mps_guard_pgN, gs_mps_shrinkN), or gs_nopg."""
    if name in CONFIGS:
        return CONFIGS[name]
    m = re.fullmatch(r"gs_guard(\d+)(?:p(\d+))?", name)
    if m:
        a, b, mps, env = CONFIGS["gs_gate"]
        a = a[:-2] + ["--prime", m.group(2)] if m.group(2) else a
        return a, b[:-2] + ["--guard", m.group(1)], mps, env
    if name == "gs_nopg":
        a, b, mps, env = CONFIGS["gs_defaults"]
        return a, b + ["--power-guard", "off"], mps, env
    m = re.fullmatch(r"gs(_mps_guard)?_pg(\d+)", name)
    if m:
        a, b, mps, env = CONFIGS["gs_mps_guard" if m.group(1) else "gs_defaults"]
        return a, b + ["--power-guard", m.group(2)], mps, dict(env, GPUSLICE_LOG_LEVEL="debug")
    m = re.fullmatch(r"gs_(d?)cap(\d+)", name)
    if m:
        a, b, mps, env = CONFIGS["gs_defaults" if m.group(1) else "gs_gate"]
        return a, ["--compute", m.group(2), "--hard-cap"], mps, env
    m = re.fullmatch(r"gs_mps_shrink(\d+)", name)
    if not m:
        return None
    a, b, mps, env = CONFIGS["gs_mps_shrink"]
    return a, b + ["--green-sms", m.group(1)], mps, env


def schedule(start):
    """Phases for A and for B: (A alone, A with B) pairs in rotating order per think
    time, and B-alone phases at the start, middle and end."""
    thinks = [float(t) for t in args.thinks.split(",")]
    per_phase = args.requests / args.reps
    plan = [("B", 0.0)]
    for i, t in enumerate(thinks):
        for r in range(args.reps):
            pair = [("A", t), ("AB", t)] if r % 2 == 0 else [("AB", t), ("A", t)]
            plan += pair
        if i == len(thinks) // 2 - 1 or (len(thinks) == 1):
            plan.append(("B", 0.0))
    plan.append(("B", 0.0))
    a, b, t0 = [], [], start
    for kind, think in plan:
        length = args.b_phase if kind == "B" else 0.3 + per_phase * (args.est_ms + think) / 1000.0
        tag = f"{kind}@{think:g}"
        a.append({"t0": t0, "t1": t0 + length, "on": "A" in kind, "think_ms": think, "tag": tag})
        b.append({"t0": t0, "t1": t0 + length, "on": "B" in kind, "think_ms": 0, "tag": tag})
        t0 += length
    return a, b, t0 - start


def b_rate(phase):
    """B's work per second in one of its phases: matmuls, or training steps (--b-job)."""
    return phase["rate"] if "rate" in phase else phase["matmuls_per_s"]


def run_config(name, lead):
    a_gs, b_gs, mps, b_env, gpuslice = config(name)
    start = time.time() + lead
    sa, sb, span = schedule(start)
    d = tempfile.mkdtemp(prefix="gs-phases-")
    fa, fb = os.path.join(d, "a.json"), os.path.join(d, "b.json")
    json.dump(sa, open(fa, "w"))
    json.dump(sb, open(fb, "w"))
    procs = []
    sampler = Sampler() if args.smi else None
    pins = args.pin.split("/") if args.pin else ["", ""]
    for mode, gs, sched, extra_env, pin in (("infer", a_gs, fa, {}, pins[0]), ("hog", b_gs, fb, b_env, pins[1])):
        cmd = [sys.executable, TENANT, mode, "--start", str(start), "--schedule", sched,
               "--batch", str(args.batch), "--size", str(args.size)]
        if mode == "hog" and args.b_group != 4:
            cmd += ["--group", str(args.b_group)]
        if mode == "hog" and args.b_job != "gemm":
            cmd += ["--job", args.b_job, "--train-batch", str(args.train_batch)]
        if mode == "infer" and args.a_model != "resnet50":
            cmd += ["--model", args.a_model, "--seq", str(args.seq), "--tokens", str(args.tokens)]
        if pin:
            cmd += ["--cpus", pin] + (["--no-gc"] if mode == "infer" else [])
        if not args.eager and mode == "infer":
            cmd.append("--graph")
        if mode == "infer":
            cmd += ["--think-dist", args.think_dist]
        if gs is not None:
            cmd = [gpuslice, "run", "--memory", args.memory] + gs + ["--"] + cmd
        env = dict(os.environ)
        if mps:
            env.update(MPS)
        env.update(extra_env)
        if gs is not None:  # the interposer says which yield it ended up using (shrink may fall back)
            env.setdefault("GPUSLICE_LOG_LEVEL", "info")
            if mode == "hog" and args.b_log_level:
                env["GPUSLICE_LOG_LEVEL"] = args.b_log_level
        procs.append(start_tenant(cmd, env))
    outs, said = [], []
    for p in procs:
        o, err = finish_tenant(p, lead + span + 120)
        if args.logs:
            os.makedirs(args.logs, exist_ok=True)
            with open(os.path.join(args.logs, f"{name}.{'AB'[len(outs)]}.log"), "w") as f:
                f.write(err)
        line = [x for x in o.splitlines() if x.startswith("{")]
        outs.append(json.loads(line[-1]) if line else {"error": err[-1500:]})
        said.append([x[:300] for x in err.splitlines()
                     if "gpuslice[interposer" in x and ("yield" in x or "guard" in x or "prime" in x)
                     and "power guard: duty" not in x][:6]
                    + [x[:200] for x in err.splitlines() if "power guard: duty" in x][-12:])
    shutil.rmtree(d, ignore_errors=True)  # the two schedules
    smi = sampler.stop(sa) if sampler else None
    ra, rb = outs
    if "error" in ra or "error" in rb:
        return {"error": ra.get("error") or rb.get("error"), "span_s": span}
    late = [p["tag"] for p in ra["phases"] if not p["lat_ms"]]
    res = {"span_s": span, "phases": [[p["tag"], round(p["t0"], 3), round(p["t1"], 3)] for p in sa],
           "b_alone": [b_rate(p) for p in rb["phases"] if p["tag"].startswith("B@")],
           "thinks": {}, "empty_phases": late, "interposer_said": {"A": said[0], "B": said[1]},
           # seconds after the schedule's start each tenant was set up (model, job, warm-up):
           # above 0 it missed phases (an empty one, a B-alone phase at 0)
           "ready_late_s": {k: round(r["ready_at"] - start, 2) for k, r in (("A", ra), ("B", rb))
                            if "ready_at" in r}}
    if smi is not None:
        res["smi"] = smi
    for t in [float(x) for x in args.thinks.split(",")]:
        alone = [p for p in ra["phases"] if p["tag"] == f"A@{t:g}"]
        withb = [p for p in ra["phases"] if p["tag"] == f"AB@{t:g}"]
        brate = [b_rate(p) for p in rb["phases"] if p["tag"] == f"AB@{t:g}"]
        la = [x for p in alone for x in p["lat_ms"]]
        lw = [x for p in withb for x in p["lat_ms"]]
        res["thinks"][f"{t:g}"] = {
            "alone": {"n": len(la), "p50": pct(la, 50), "p99": pct(la, 99),
                      "p99_per_phase": [pct(p["lat_ms"], 99) for p in alone],
                      "busy": sum(p["busy_fraction"] for p in alone) / max(1, len(alone))},
            "with_b": {"n": len(lw), "p50": pct(lw, 50), "p99": pct(lw, 99),
                       "p99_per_phase": [pct(p["lat_ms"], 99) for p in withb],
                       "busy": sum(p["busy_fraction"] for p in withb) / max(1, len(withb))},
            "b_rate": sum(brate) / max(1, len(brate)),
        }
    return res


res = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "batch": args.batch, "pin": args.pin, "graph": not args.eager,
       "gpuslice": args.gpuslice, "builds": dict(x.split("=", 1) for x in args.build), "thinks": args.thinks,
       "think_dist": args.think_dist, "reps": args.reps, "size": args.size, "b_group": args.b_group,
       "a_model": args.a_model, "b_job": args.b_job, "configs": {}}
if args.a_model == "decode":
    res["tokens"] = args.tokens
if args.a_model == "bert":
    res["seq"] = args.seq
if args.b_job == "train":
    res["train_batch"] = args.train_batch


def summarise():
    """Ratios: against this variant's own A alone and B alone, and against the native
    variant's (the reference: no gpuslice, no MPS)."""
    nat = res["configs"].get("native", {})
    rows = []
    for name, c in res["configs"].items():
        if "thinks" not in c:
            continue
        b_alone_own = max(c["b_alone"]) if c["b_alone"] else 0
        b_alone_nat = max(nat.get("b_alone") or [0])  # none without a native variant in the run
        for t, r in c["thinks"].items():
            ref = nat.get("thinks", {}).get(t, r)["alone"]["p99"] if nat else r["alone"]["p99"]
            row = {"config": name, "think_ms": float(t), "A_busy_with_B": round(r["with_b"]["busy"], 3),
                   "A_busy_alone": round(r["alone"]["busy"], 3),
                   "p99_alone_ms": round(r["alone"]["p99"], 3), "p99_with_B_ms": round(r["with_b"]["p99"], 3),
                   "p99_ratio_own": round(r["with_b"]["p99"] / r["alone"]["p99"], 3) if r["alone"]["p99"] else None,
                   "p99_ratio_native": round(r["with_b"]["p99"] / ref, 3) if ref else None,
                   "p50_ratio_own": round(r["with_b"]["p50"] / r["alone"]["p50"], 3) if r["alone"]["p50"] else None,
                   "B_fraction_native": round(r["b_rate"] / b_alone_nat, 3) if b_alone_nat else None,
                   "B_fraction_own": round(r["b_rate"] / b_alone_own, 3) if b_alone_own else None,
                   "n_with_B": r["with_b"]["n"]}
            rows.append(row)
    res["summary"] = rows


MPS = None
names = [n for n in args.configs.split(",") if n]
unknown = [n for n in names if config(n) is None]
if unknown:
    sys.exit(f"latency: unknown config(s) {unknown}; known: {sorted(CONFIGS)}, gs_guardN[pM], gs_capN, gs_dcapN, "
             "gs_pgN, gs_mps_guard_pgN, gs_nopg, "
             "gs_mps_shrinkN, each with @NAME of a --build and #TAG")
mps_error = None
try:
    for n in names:
        t = time.time()
        if config(n)[2] and MPS is None and mps_error is None:
            try:
                MPS = mps_env()
                mps_control(MPS, "start")
            except (OSError, subprocess.CalledProcessError) as ex:
                mps_error = f"MPS daemon did not start: {ex}"
        if config(n)[2] and mps_error:
            res["configs"][n] = {"error": mps_error}
        else:
            first = not res["configs"]
            lead = (args.lead + 10 if args.first_lead is None else args.first_lead) if first else args.lead
            res["configs"][n] = run_config(n, lead)
        summarise()
        json.dump(res, open(args.out, "w"), indent=1)  # saved after every variant
        for row in res["summary"]:
            if row["config"] == n:
                print(json.dumps(row), flush=True)
        print(f"# {n}: {time.time() - t:.0f} s", res["configs"][n].get("error", ""), flush=True)
finally:
    if MPS and not mps_error:
        mps_control(MPS, "quit")
sys.exit(1 if any("error" in c for c in res["configs"].values()) else 0)
