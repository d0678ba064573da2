"""Issue 6 on a real GPU, side by side in one run.

  python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --out compute.json [--part shares|latency|all]
      [--part shares-mps: the shares with NVIDIA MPS underneath]

shares:  two bf16 matmul hogs at 25/75, 30/70, 50/50 (gpuslice --compute), and one
         hog hard-capped at 25/50/75: achieved share = throughput / solo throughput.
latency: ResNet-50 fp16 (latency-critical) next to a matmul hog (best-effort):
         alone, plain time-slicing, gpuslice (--critical), NVIDIA MPS with the hog at
         30 % and 50 % active threads; at several think times (A's load).
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h200_common import mps_env, mps_control  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--gpuslice", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--part", default="all")
ap.add_argument("--secs", type=float, default=6.0)
ap.add_argument("--requests", type=int, default=1000, help="curve: A's requests per run")
ap.add_argument("--batch", type=int, default=8, help="curve: A's batch size (the issue asks for 1 and 8: run twice)")
ap.add_argument("--debug-dir", help="keep every tenant's whole stderr here, with the controller's "
                "per-window debug log (GPUSLICE_LOG_LEVEL=debug)")
ap.add_argument("--thinks", default="0,2,10", help="curve: A's think times, ms")
ap.add_argument("--mps-threads", default="100,50", help="curve: B's MPS thread percentages under gpuslice")
ap.add_argument("--mps-plain", type=int, default=50, help="curve: B's thread percentage under plain MPS")
ap.add_argument("--no-caps", action="store_true", help="shares: pairs only")
ap.add_argument("--pair", default="25/75", help="pair-debug: the two shares")
ap.add_argument("--cap-variant", action="append", default=[], metavar="NAME=LIB",
                help="shares: run the hard caps again with another libgpuslice.so (GPUSLICE_INTERPOSER), "
                "e.g. one built with a longer window period")
args = ap.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__))
TENANT = os.path.join(HERE, "compute_tenant.py")
res = {"date": time.strftime("%Y-%m-%d %H:%M:%S")}


def cmd(mode, gs=None, extra=()):
    base = [sys.executable, TENANT, mode] + list(extra)
    if gs is None:
        return base
    return [args.gpuslice, "run", "--memory", "24Gi"] + gs + ["--"] + base


def together(specs, env_extra=None, lead=8.0):
    """Start all tenants so they begin at the same wall-clock moment."""
    start = time.time() + lead
    procs = []
    for (mode, gs, extra, env) in specs:
        e = dict(os.environ)
        e.update(env or {})
        if args.debug_dir and gs is not None:
            e["GPUSLICE_LOG_LEVEL"] = "debug"
        procs.append(subprocess.Popen(cmd(mode, gs, list(extra) + ["--start", str(start)]), env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for i, p in enumerate(procs):
        o, err = p.communicate(timeout=300)
        if args.debug_dir:
            os.makedirs(args.debug_dir, exist_ok=True)
            tag = "-".join(str(x) for x in [specs[i][0]] + list(specs[i][1] or ["native"]))
            with open(os.path.join(args.debug_dir, f"{time.time():.0f}-{i}-{tag}.log"), "w") as f:
                f.write(err)
        line = [l for l in o.splitlines() if l.startswith("{")]
        r = json.loads(line[-1]) if line else {"error": err[-800:]}
        r["stderr_tail"] = err[-300:]
        r["start"] = start  # to find the run in a clock trace
        outs.append(r)
    return outs


def rate_during(hog_out, a_out):
    """The hog's matmuls per second while the inference tenant ran."""
    t0, t1 = a_out.get("t_begin"), a_out.get("t_end")
    st = hog_out.get("stamps", [])
    if not t0 or not st:
        return 0.0
    inside = [t for t in st if t0 <= t <= t1]
    return 4 * len(inside) / (t1 - t0)


def hog(gs=None, env=None, size=8192):
    return ("hog", gs, ["--secs", str(args.secs), "--size", str(size)], env)


def shares(key, gs_extra=(), env=None):
    """Pairs, plain sharing of two hogs, and hard caps; every tenant with gs_extra on its
    gpuslice command line and env in its environment (MPS underneath: both)."""
    gx = list(gs_extra)

    def with_lib(lib):
        return dict(env or {}, **({"GPUSLICE_INTERPOSER": lib} if lib else {})) or None

    # Solo before and after everything: the GPU's throughput drifts by a few percent
    # over minutes (power-limited), and every share is relative to it.
    solo_r = together([hog(env=env)])[0]
    print("solo", solo_r["matmuls_per_s"], "gpu time", solo_r.get("gpu_time_fraction"), flush=True)
    solo_gs = together([hog(["--compute", "100"] + gx, env=env)])[0]["matmuls_per_s"]
    sh = {"solo_first": solo_r["matmuls_per_s"], "solo_under_gpuslice_100": solo_gs, "pairs": {}, "caps": {}}
    res[key] = sh
    solo = solo_r["matmuls_per_s"]

    def save():
        json.dump(res, open(args.out, "w"), indent=1)

    for a, b in ((25, 75), (30, 70), (50, 50)):
        ra, rb = together([hog(["--compute", str(a)] + gx, env=env), hog(["--compute", str(b)] + gx, env=env)])
        ra.pop("stamps", None)
        rb.pop("stamps", None)
        sh["pairs"][f"{a}/{b}"] = {"raw": [ra, rb]}
        print("pair", a, b, 100 * ra.get("matmuls_per_s", 0) / solo, 100 * rb.get("matmuls_per_s", 0) / solo, flush=True)
        save()
    # plain sharing (time-slicing, or MPS with all threads) for reference
    ra, rb = together([hog(env=env), hog(env=env)])
    sh["time_slicing_raw"] = [ra.get("matmuls_per_s", 0), rb.get("matmuls_per_s", 0)]
    sh["solo_gpu_time_fraction"] = solo_r.get("gpu_time_fraction")
    variants = [("default", None)] + [tuple(v.split("=", 1)) for v in args.cap_variant]
    for vname, lib in variants if not args.no_caps else []:
        for c in (25, 50, 75):
            r = together([hog(["--compute", str(c), "--hard-cap"] + gx, env=with_lib(lib))])[0]
            r.pop("stamps", None)
            ck = str(c) if vname == "default" else f"{c}_{vname}"
            sh["caps"][ck] = {"raw": r, "gpu_time": 100 * r.get("gpu_time_fraction", 0)}
            print("cap", ck, 100 * r.get("matmuls_per_s", 0) / solo, flush=True)
            save()
    solo_last = together([hog(env=env)])[0]["matmuls_per_s"]
    sh["solo_last"] = solo_last
    sh["solo_matmuls_per_s"] = solo = (sh["solo_first"] + solo_last) / 2
    for k, v in sh["pairs"].items():
        v["achieved"] = [100 * r.get("matmuls_per_s", 0) / solo for r in v["raw"]]
        print("pair", k, [round(x, 1) for x in v["achieved"]], flush=True)
    sh["time_slicing_pair"] = [100 * x / solo for x in sh["time_slicing_raw"]]
    for k, v in sh["caps"].items():
        v["achieved"] = 100 * v["raw"].get("matmuls_per_s", 0) / solo
        print("cap", k, round(v["achieved"], 1), flush=True)
    print("solo first/last", sh["solo_first"], solo_last, flush=True)
    save()
    return sh


if args.part in ("shares", "all"):
    shares("shares")

if args.part == "shares-mps":
    # The same under NVIDIA MPS (gpuslice --sharing mps: the windows still take turns), with
    # the solo loop a client of the same daemon; plain MPS thread percentages for reference.
    # Achieved shares are against the solo loop under MPS; solo_native says what that costs.
    env = mps_env()
    res["solo_native"] = together([hog()])[0]["matmuls_per_s"]
    try:
        mps_control(env, "start")
        sh = shares("shares_mps", ["--sharing", "mps"], env)
        plain = {}
        for c in (25, 50, 75):
            r = together([hog(env=dict(env, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=str(c)))])[0]
            plain[str(c)] = 100 * r.get("matmuls_per_s", 0) / sh["solo_matmuls_per_s"]
            print("plain mps threads", c, round(plain[str(c)], 1), flush=True)
        sh["plain_mps_threads"] = plain
        json.dump(res, open(args.out, "w"), indent=1)
    finally:
        mps_control(env, "quit")

if args.part == "pair-debug":
    # One pair with the controller's debug log kept (--debug-dir): when each window was
    # entered, waited for, drained, and what debt it left.
    # With --cap-variant NAME=LIB, the pair again under each variant library (no log).
    pd = {}
    dbg = args.debug_dir
    for vname, lib in [("default", None)] + [tuple(v.split("=", 1)) for v in args.cap_variant]:
        env = {"GPUSLICE_INTERPOSER": lib} if lib else None
        args.debug_dir = dbg if lib is None else None
        sa, sb = args.pair.split("/")
        ra, rb = together([hog(["--compute", sa], env=env), hog(["--compute", sb], env=env)])
        ra.pop("stamps", None)
        rb.pop("stamps", None)
        pd[vname] = [ra, rb]
        print("pair-debug", vname, ra.get("matmuls_per_s"), rb.get("matmuls_per_s"),
              ra.get("gpu_time_fraction"), rb.get("gpu_time_fraction"), flush=True)
        json.dump(res | {"pair_debug": pd}, open(args.out, "w"), indent=1)
    res["pair_debug"] = pd

if args.part in ("latency", "all"):
    lat = {}
    n = 600

    def infer(gs=None, think=2.0, env=None):
        return ("infer", gs, ["--requests", str(n), "--think-ms", str(think)], env)

    def be(gs=None, env=None):
        return ("hog", gs, ["--secs", "30", "--warm", "0", "--size", "4096"], env)

    solo_b = together([("hog", None, ["--secs", "5", "--size", "4096"], None)])[0]["matmuls_per_s"]
    lat["solo_hog_matmuls_per_s"] = solo_b
    for think in (2.0, 10.0, 0.0):
        row = {}
        row["alone"] = together([infer(think=think)])[0]
        row["alone_gpuslice"] = together([infer(["--critical"], think=think)])[0]
        for name, a_gs, b_gs in (("time_slicing", None, None),
                                 ("gpuslice", ["--critical"], ["--compute", "100"]),
                                 ("gpuslice_bound", ["--critical"], ["--compute", "100", "--yield", "bound"])):
            # The hog runs longer than A; its throughput is measured while A runs.
            ra, rb = together([infer(a_gs, think=think), ("hog", b_gs, ["--secs", "15", "--warm", "0", "--size", "4096"], None)])
            rb_rate = rate_during(rb, ra)
            rb.pop("stamps", None)
            row[name] = {"A": ra, "B": rb, "p99_ratio": ra.get("p99_ms", 0) / row["alone"]["p99_ms"],
                         "B_fraction": rb_rate / solo_b}
            print(think, name, row[name]["p99_ratio"], row[name]["B_fraction"], flush=True)
        lat[f"think_{think}ms"] = row
    # MPS, for comparison (2 ms think time)
    env = mps_env()
    try:
        mps_control(env, "start")
        mps = {}
        alone = together([infer(think=2.0, env=env)])[0]
        mps["alone"] = alone
        for pct in (30, 50):
            envb = dict(env, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=str(pct))
            ra, rb = together([infer(think=2.0, env=env), ("hog", None, ["--secs", "15", "--warm", "0", "--size", "4096"], envb)])
            rb_rate = rate_during(rb, ra)
            rb.pop("stamps", None)
            mps[f"hog_{pct}pct"] = {"A": ra, "B": rb, "p99_ratio_vs_mps_alone": ra.get("p99_ms", 0) / alone["p99_ms"],
                                    "p99_ratio_vs_no_mps_alone": ra.get("p99_ms", 0) / lat["think_2.0ms"]["alone"]["p99_ms"],
                                    "B_fraction": rb_rate / solo_b}
            print("mps", pct, mps[f"hog_{pct}pct"]["p99_ratio_vs_no_mps_alone"], mps[f"hog_{pct}pct"]["B_fraction"], flush=True)
        lat["mps"] = mps
    except Exception as ex:  # MPS missing or failed: say so, keep the rest
        lat["mps"] = {"error": str(ex)}
    finally:
        mps_control(env, "quit")
    res["latency"] = lat

if args.part in ("mps", "all"):
    # What MPS underneath can give: A (ResNet-50, 2 ms think) next to the hog, MPS on,
    # with per-client settings (active thread %, client priority 0 normal / 1 below
    # normal) and with gpuslice's critical class on top.
    probe = {}
    env = mps_env()
    n = 600

    def infer_m(gs=None, envx=None, think=2.0):
        return ("infer", gs, ["--requests", str(n), "--think-ms", str(think)], envx)

    def hog_m(gs=None, envx=None):
        return ("hog", gs, ["--secs", "10", "--warm", "0", "--size", "4096"], envx)

    solo_b = together([("hog", None, ["--secs", "5", "--size", "4096"], None)])[0]["matmuls_per_s"]
    probe["solo_hog_matmuls_per_s"] = solo_b
    probe["alone_no_mps"] = together([infer_m()])[0]
    probe["alone_no_mps_think0"] = together([infer_m(think=0.0)])[0]
    try:
        mps_control(env, "start")
        probe["alone_mps"] = together([infer_m(envx=env)])[0]
        probe["solo_hog_mps"] = together([("hog", None, ["--secs", "5", "--size", "4096"], env)])[0]["matmuls_per_s"]
        variants = (
            ("mps_plain", None, None, {}),
            ("mps_b_prio1", None, None, {"CUDA_MPS_CLIENT_PRIORITY": "1"}),
            ("mps_b_prio1_t50", None, None, {"CUDA_MPS_CLIENT_PRIORITY": "1", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"}),
            ("mps_b_prio1_t25", None, None, {"CUDA_MPS_CLIENT_PRIORITY": "1", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"}),
            ("mps_b_prio1_bound", ["--critical"], ["--compute", "100", "--yield", "bound"], {"CUDA_MPS_CLIENT_PRIORITY": "1"}),
            ("mps_b_prio1_gate", ["--critical"], ["--compute", "100"], {"CUDA_MPS_CLIENT_PRIORITY": "1"}),
        )
        for think in (2.0, 0.0):
            for name, a_gs, b_gs, benv in variants:
                if think == 0.0 and name in ("mps_b_prio1_t25", "mps_b_prio1_gate"):
                    continue
                ra, rb = together([infer_m(a_gs, env, think), hog_m(b_gs, dict(env, **benv))])
                rb_rate = rate_during(rb, ra)
                rb.pop("stamps", None)
                key = f"{name}_think{think}"
                ref = probe["alone_no_mps" if think else "alone_no_mps_think0"]
                probe[key] = {"A": ra, "B": rb, "p99_ratio": ra.get("p99_ms", 0) / ref["p99_ms"],
                              "p50_ratio": ra.get("p50_ms", 0) / ref["p50_ms"],
                              "B_fraction": rb_rate / solo_b}
                print("mps-probe", key, probe[key]["p99_ratio"], probe[key]["B_fraction"], ra.get("busy_fraction"), flush=True)
    except Exception as ex:
        probe["error"] = str(ex)
    finally:
        mps_control(env, "quit")
    res["mps_probe"] = probe

if args.part in ("curve",):
    # A's p99 against B's throughput over A's load, side by side: plain time-slicing,
    # gpuslice on time-slicing (critical gates best-effort), gpuslice on MPS
    # (--sharing mps: A critical at normal MPS client priority, B best-effort below
    # normal and bounded to one kernel in flight while A is busy; all threads or a
    # thread percentage), and plain MPS with B at a thread percentage.
    # Saved after every pair, so a cut run keeps what it measured.
    curve = {"requests": args.requests}
    res["curve"] = curve

    def save():
        json.dump(res, open(args.out, "w"), indent=1)

    env = mps_env()
    thinks = [float(t) for t in args.thinks.split(",")]
    hog_secs = {t: 4 + args.requests * (t + 5.5) / 1000.0 for t in thinks}

    batch = args.batch
    curve["batch"] = batch

    def inf(gs, think, envx=None):
        return ("infer", gs, ["--requests", str(args.requests), "--think-ms", str(think),
                              "--batch", str(batch)], envx)

    def hg(gs, think, envx=None):
        return ("hog", gs, ["--secs", str(hog_secs[think]), "--warm", "0", "--size", "4096"], envx)

    def pair(key, a, b, ref):
        ra, rb = together([a, b])
        rate = rate_during(rb, ra)
        rb.pop("stamps", None)
        curve[key] = {"A": ra, "B": rb, "p99_ratio": ra.get("p99_ms", 0) / ref["p99_ms"],
                      "p50_ratio": ra.get("p50_ms", 0) / ref["p50_ms"], "B_fraction": rate / curve["solo_hog"],
                      "A_busy": ra.get("busy_fraction")}
        print("curve", key, round(curve[key]["p99_ratio"], 3), round(curve[key]["B_fraction"], 3),
              "A busy", ra.get("busy_fraction"), "p99", ra.get("p99_ms"), flush=True)
        save()

    curve["solo_hog"] = together([("hog", None, ["--secs", "5", "--size", "4096"], None)])[0]["matmuls_per_s"]
    for t in thinks:
        curve[f"alone_think{t}"] = together([inf(None, t)])[0]
        print("curve alone", t, curve[f"alone_think{t}"].get("p99_ms"), flush=True)
        pair(f"time_slicing_think{t}", inf(None, t), hg(None, t), curve[f"alone_think{t}"])
        pair(f"gpuslice_timeslice_think{t}", inf(["--critical"], t), hg(["--compute", "100"], t),
             curve[f"alone_think{t}"])
    try:
        mps_control(env, "start")
        for t in thinks:
            for thr in [x for x in args.mps_threads.split(",") if x]:
                bgs = ["--compute", "100", "--sharing", "mps"] + (["--mps-threads", thr] if thr != "100" else [])
                pair(f"gpuslice_mps_t{thr}_think{t}", inf(["--critical", "--sharing", "mps"], t, env),
                     hg(bgs, t, env), curve[f"alone_think{t}"])
            pair(f"mps_b{args.mps_plain}pct_think{t}", inf(None, t, env),
                 hg(None, t, dict(env, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=str(args.mps_plain))),
                 curve[f"alone_think{t}"])
    except Exception as ex:
        curve["error"] = str(ex)
    finally:
        mps_control(env, "quit")

json.dump(res, open(args.out, "w"), indent=1)
print(json.dumps(res)[:3000])
