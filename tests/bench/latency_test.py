"""bench/latency.py and bench/latency_table.py without a GPU: a stand-in tenant
(GS_BENCH_TENANT) answers the harness's schedule at once with latencies and rates chosen
here, and the test checks the ratios the harness and the table compute from them, what the
harness passes to the tenants, and that a variant @NAME runs under the build --build
names. Device time is short; a harness that breaks there wastes a whole call."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Tap, in_tempdir  # noqa: E402

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SRC, "build"))

STANDIN = r'''
import json, os, sys, time
args = sys.argv[1:]
mode = args[0]
opt = lambda name: args[args.index(name) + 1] if name in args else None
limits = os.path.join(os.environ.get("GPUSLICE_STATE_DIR", "/nonexistent"), "limits")
with open(os.path.join(os.environ["GS_STANDIN_LOG"], mode + "-" + str(os.getpid())), "w") as f:
    json.dump({"argv": args, "now": time.time(), "log_level": os.environ.get("GPUSLICE_LOG_LEVEL"),
               "limits": open(limits).read() if os.path.exists(limits) else ""}, f)
print("standin %s says on stderr" % mode, file=sys.stderr)
out = {"mode": mode, "phases": [], "ready_at": time.time()}
for ph in json.load(open(opt("--schedule"))):
    if not ph["on"]:
        continue
    if mode == "hog":  # B: 1000 matmuls/s alone, 600 next to A
        rate = 1000.0 if ph["tag"].startswith("B@") else 600.0
        if "--job" in args:  # another job: its rate in its own unit, no matmuls
            out["phases"].append({"tag": ph["tag"], "rate": rate / 100, "unit": "steps"})
        else:
            out["phases"].append({"tag": ph["tag"], "matmuls_per_s": rate})
    else:  # A: p50 1.0 / p99 2.0 ms alone; 1.2 / 3.0 ms with B
        alone = ph["tag"].startswith("A@")
        lat = [1.0 if alone else 1.2] * 99 + [2.0 if alone else 3.0]
        out["phases"].append({"tag": ph["tag"], "lat_ms": lat, "busy_fraction": 0.5})
if mode == "hog":  # B stays through its first phase (B alone), for the clock sampler
    first = json.load(open(opt("--schedule")))[0]
    time.sleep(max(0.0, first["t1"] - time.time()))
print(json.dumps(out))
'''


def main():
    return in_tempdir("gs-phases-test-", check)


def script(path, body):
    """An executable shell script at path; returns path."""
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def check(d):
    t = Tap()
    standin = os.path.join(d, "standin.py")
    with open(standin, "w") as f:
        f.write(STANDIN)
    logs = os.path.join(d, "argv")
    os.mkdir(logs)
    out = os.path.join(d, "phases.json")
    # gpuslice run on the simulated GPU (no NVIDIA driver here)
    wrapper = script(os.path.join(d, "gpuslice"),
                     'cmd=$1; shift\nexec "%s" "$cmd" --simulated "$@"' % os.path.join(BUILD, "gpuslice"))
    # another build: the same, and it leaves a mark per tenant
    alt = script(os.path.join(d, "gpuslice-alt"),
                 'touch "%s/alt-$$"\nexec "%s" "$@"' % (d, wrapper))
    # nvidia-smi played by a loop: one clock and power sample every 50 ms
    bindir = os.path.join(d, "bin")
    os.mkdir(bindir)
    script(os.path.join(bindir, "nvidia-smi"), 'while :; do echo "1980, 301.5"; sleep 0.05; done')
    env = dict(os.environ, GS_BENCH_TENANT=standin, GS_STANDIN_LOG=logs,
               PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    cmd = [sys.executable, os.path.join(SRC, "bench", "latency.py"),
           "--gpuslice", wrapper, "--configs", "native,gs_guard600p400,gs_defaults@alt", "--build", "alt=" + alt,
           "--thinks", "0,3", "--think-dist", "exp", "--requests", "10", "--reps", "1",
           "--lead", "1", "--first-lead", "3", "--b-phase", "1.5", "--memory", "1Gi", "--smi",
           "--size", "1024", "--b-group", "64", "--out", out]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if not t.ok(p.returncode == 0, "the harness runs with a stand-in tenant", p.stderr[-2000:]):
        return t.done()
    r = json.load(open(out))
    t.ok(r.get("think_dist") == "exp" and r.get("graph") is True, "the results say how A was run",
         {k: r.get(k) for k in ("think_dist", "graph")})
    t.ok(not any("error" in c for c in r["configs"].values()), "every variant ran",
         json.dumps(r["configs"])[:2000])
    blen = [round(t1 - t0, 3) for c in r["configs"].values() for tag, t0, t1 in c.get("phases", [])
            if tag.startswith("B@")]
    t.ok(len(blen) == 9 and all(x == 1.5 for x in blen), "--b-phase sets the B-alone phases' length", blen)
    rows = {(x["config"], x["think_ms"]): x for x in r["summary"]}
    t.ok(set(rows) == {(c, th) for c in ("native", "gs_guard600p400", "gs_defaults@alt") for th in (0.0, 3.0)},
         "one summary row per variant and think time", sorted(rows))
    ok = all(x["p99_ratio_own"] == 1.5 and x["p99_ratio_native"] == 1.5 and x["p50_ratio_own"] == 1.2
             and x["B_fraction_native"] == 0.6 and x["A_busy_with_B"] == 0.5 for x in rows.values())
    t.ok(ok, "p99 1.5x and p50 1.2x of alone, B at 0.6 of alone, from the stand-in's figures",
         json.dumps(r["summary"], indent=1))
    smi = [c.get("smi", {}) for c in r["configs"].values()]
    t.ok(all(v.get("B@0", {}).get("sm_mhz") == 1980 and v["B@0"]["power_w"] == 301.5 and v["B@0"]["n"] > 0
             for v in smi), "--smi: the sampled clock and power per phase kind", smi)
    argv, leads, limits = [], [], {"infer": [], "hog": []}
    for name in sorted(os.listdir(logs)):
        with open(os.path.join(logs, name)) as f:
            x = json.load(f)
        argv.append((name.split("-")[0], x["argv"]))
        if x["limits"]:
            limits[name.split("-")[0]].append(x["limits"])
        if name.startswith("infer"):
            leads.append(float(x["argv"][x["argv"].index("--start") + 1]) - x["now"])
    leads.sort()  # the tenant's own start-up (python) takes some of each lead
    t.ok(len(leads) == 3 and leads[1] <= 1.0 and leads[2] <= 3.0 and leads[2] > leads[1] + 1.5,
         "the first variant's tenants get --first-lead to start, the next --lead", leads)
    t.ok(any("prime_us = 400" in x and "priority = critical" in x for x in limits["infer"])
         and any("guard_us = 600" in x and "prime_us = 0" in x for x in limits["hog"]),
         "gs_guard600p400: A critical with the prime at 400 us, B with the guard at 600 us", limits)
    t.ok(any("prime_us = 250" in x and "priority = critical" in x for x in limits["infer"])
         and len([x for x in limits["hog"] if "guard_us = 600" in x]) == 2,
         "gs_defaults: A critical with the prime at its default, B with the guard at its default", limits)
    marks = [x for x in os.listdir(d) if x.startswith("alt-")]
    t.ok(len(marks) == 2, "gs_defaults@alt: both tenants under the build --build gave alt", marks)
    infer = [a for m, a in argv if m == "infer"]
    hog = [a for m, a in argv if m == "hog"]
    t.ok(len(infer) == 3 and len(hog) == 3, "A and B started once per variant", [m for m, _ in argv])
    t.ok(all("--think-dist" in a and a[a.index("--think-dist") + 1] == "exp" and "--graph" in a
             for a in infer), "A gets the think distribution and --graph", infer)
    t.ok(all("--think-dist" not in a and "--graph" not in a for a in hog), "B gets neither", hog)
    t.ok(all(a[a.index("--group") + 1] == "64" and a[a.index("--size") + 1] == "1024" for a in hog if "--group" in a)
         and len([a for a in hog if "--group" in a]) == 3, "B gets its matmul size and group", hog)
    tab = subprocess.run([sys.executable, os.path.join(SRC, "bench", "latency_table.py"), out],
                         capture_output=True, text=True, timeout=60)
    first, _, clocks = tab.stdout.partition("SM clock")
    lines = [x for x in first.splitlines() if x.startswith("| 8 |")]
    t.ok(len([x for x in clocks.splitlines() if x.startswith("| 8 |") and "| 1980 |" in x]) == 6,
         "the table gives the clocks per variant and think time", tab.stdout)
    t.ok(tab.returncode == 0 and len(lines) == 6, "the table has a row per cell", tab.stdout + tab.stderr)
    cells = [[c.strip() for c in x.strip("|").split("|")] for x in lines]
    t.ok(all(c[2] in ("~0", "~3") and c[6] == "1.50" and c[7] == "1.50" and c[8] == "1.20"
             and c[9] == "0.60" for c in cells), "its ratios, and think times marked as random", tab.stdout)
    t.ok("exponential" in tab.stdout, "the table says what ~ means", tab.stdout)
    balone = [x for x in tab.stdout.splitlines() if x.startswith("| 1024 | 64 |")]
    t.ok(len(balone) == 3 and all(x.endswith("| 1000 | 1.00 |") for x in balone),
         "the table gives B alone per variant against native, by size and group", tab.stdout)
    t.ok("A / B" not in tab.stdout, "no workload column where A and B are the ResNet-50 and the GEMM loop",
         tab.stdout)
    late = [c.get("ready_late_s", {}) for c in r["configs"].values()]
    t.ok(all(set(x) == {"A", "B"} and all(v <= 0 for v in x.values()) for x in late),
         "each variant says when each tenant was set up against the schedule's start (here before)", late)
    t.ok(" !" not in first and "started late" not in tab.stdout, "no variant marked late", tab.stdout)
    late_start(t, d, r)
    other_workloads(t, d, env, wrapper, out, logs)
    return t.done()


def late_start(t, d, r):
    """A variant whose tenant was set up after the schedule began (empty phases, B at 0 in its
    first phase) is marked in the table, with why; the others are not."""
    c = r["configs"]["gs_guard600p400"]
    c["empty_phases"] = ["A@0"]
    c["ready_late_s"] = {"A": 2.5, "B": -1.0}
    c["b_alone"][0] = 0.0
    path = os.path.join(d, "late.json")
    with open(path, "w") as f:
        json.dump(r, f)
    tab = subprocess.run([sys.executable, os.path.join(SRC, "bench", "latency_table.py"), path],
                         capture_output=True, text=True, timeout=60)
    rows = [x for x in tab.stdout.splitlines() if x.startswith("| 8 |")]
    marked = [x for x in rows if " ! |" in x]
    t.ok(tab.returncode == 0 and len(marked) == 2 and all("gs_guard600p400 !" in x for x in marked),
         "the late variant's rows are marked, no other", tab.stdout + tab.stderr)
    t.ok("- gs_guard600p400 (late.json): 1 empty phase(s); set up A 2.5 s after the start" in tab.stdout
         and "raise --lead" in tab.stdout, "the table says why and what to do", tab.stdout)


def other_workloads(t, d, env, wrapper, first, logs):
    """--a-model and --b-job: the tenants are told, B's rate is read in its own unit, and
    the table names the workloads and keeps their references apart from the first run's."""
    for x in os.listdir(logs):
        os.remove(os.path.join(logs, x))
    out = os.path.join(d, "decode-train.json")
    cmd = [sys.executable, os.path.join(SRC, "bench", "latency.py"), "--gpuslice", wrapper,
           "--configs", "native,gs_defaults", "--thinks", "3", "--requests", "10", "--reps", "1",
           "--lead", "0.5", "--first-lead", "2", "--b-phase", "1.0", "--memory", "1Gi", "--eager",
           "--a-model", "decode", "--tokens", "8", "--b-job", "train", "--train-batch", "16", "--out", out,
           "--logs", os.path.join(d, "stderr"), "--b-log-level", "debug"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if not t.ok(p.returncode == 0, "the harness runs a decode model beside a training job", p.stderr[-2000:]):
        return
    r = json.load(open(out))
    t.ok(r.get("a_model") == "decode" and r.get("tokens") == 8 and r.get("b_job") == "train"
         and r.get("train_batch") == 16 and "seq" not in r, "the results say which workloads ran",
         {k: r.get(k) for k in ("a_model", "tokens", "b_job", "train_batch", "seq")})
    t.ok(all(x["B_fraction_native"] == 0.6 and x["p99_ratio_own"] == 1.5 for x in r["summary"])
         and len(r["summary"]) == 2, "B's training steps against its own alone: 0.6", r["summary"])
    argv, levels = [], []
    for name in sorted(os.listdir(logs)):
        with open(os.path.join(logs, name)) as f:
            x = json.load(f)
        argv.append((name.split("-")[0], x["argv"]))
        levels.append((name.split("-")[0], x["limits"] != "", x["log_level"]))  # limits: under gpuslice
    t.ok(sorted(levels) == [("hog", False, None), ("hog", True, "debug"), ("infer", False, None),
                            ("infer", True, "info")],
         "--b-log-level: B under gpuslice logs at debug, A at info, the native tenants as they were", levels)
    kept = {}
    for name in sorted(os.listdir(os.path.join(d, "stderr"))):
        with open(os.path.join(d, "stderr", name)) as f:
            kept[name] = f.read()
    t.ok(sorted(kept) == ["gs_defaults.A.log", "gs_defaults.B.log", "native.A.log", "native.B.log"]
         and "standin infer says" in kept["gs_defaults.A.log"] and "standin hog says" in kept["native.B.log"],
         "--logs: each tenant's whole stderr per variant", {k: v[-300:] for k, v in kept.items()})
    opt = lambda a, k: a[a.index(k) + 1] if k in a else None  # noqa: E731
    infer = [a for m, a in argv if m == "infer"]
    hog = [a for m, a in argv if m == "hog"]
    t.ok(len(infer) == 2 and all(opt(a, "--model") == "decode" and opt(a, "--tokens") == "8" and "--graph" not in a
                                 for a in infer), "A gets --model decode, --tokens, and no --graph (--eager)", infer)
    t.ok(len(hog) == 2 and all(opt(a, "--job") == "train" and opt(a, "--train-batch") == "16" for a in hog),
         "B gets --job train and its batch", hog)
    tab = subprocess.run([sys.executable, os.path.join(SRC, "bench", "latency_table.py"), first, out],
                         capture_output=True, text=True, timeout=60)
    rows = [[c.strip() for c in x.strip("|").split("|")] for x in tab.stdout.splitlines()
            if x.startswith("| 8 |") and x.count("|") == 12]
    mine = [c for c in rows if c[10] == "decode/8 / train 16"]
    t.ok(tab.returncode == 0 and len(rows) == 8 and len(mine) == 2
         and all(c[6] == "1.50" and c[7] == "1.50" and c[9] == "0.60" for c in mine),
         "the table names each row's workloads, and takes each one's native reference from its own run",
         tab.stdout + tab.stderr)
    t.ok(any(x.startswith("| train | 16 | gs_defaults | 10 | 1.00 |") for x in tab.stdout.splitlines()),
         "B alone: the training job's steps per second against its own native", tab.stdout)


if __name__ == "__main__":
    sys.exit(main())
