"""bench/h200_mps_probe.py without a GPU: a stand-in torch (and torchvision) on PYTHONPATH
plays a GPU whose graph replay takes 2 ms in its own context and 2.5 ms as an MPS client
(CUDA_MPS_PIPE_DIRECTORY set), and a stand-in nvidia-cuda-mps-control on PATH logs how it
is called. The test checks that every variant runs in its own process, under MPS only
where it should, that the daemon is started once and always asked to quit, and that the
ratios against native come out of the figures the stand-in made. Device time is short; a
probe that breaks there wastes a whole call."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Tap, in_tempdir  # noqa: E402

import standin  # noqa: E402  (beside this file)

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(HERE)))

TORCH = r'''
MPS = bool(os.environ.get("CUDA_MPS_PIPE_DIRECTORY"))
THREADS = int(os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100"))


class T:
    def add_(self, *a):
        return self


def zeros(*a, **k):
    return T()


randn = empty = zeros


def mm(*a, **k):
    pass


class _Graph:
    def replay(self):
        time.sleep(0.0025 if MPS else 0.002)


class _Props:
    multi_processor_count = 132 * THREADS // 100


class cuda(_Cuda):
    CUDAGraph = _Graph

    @staticmethod
    def get_device_properties(i):
        return _Props()

    @staticmethod
    def _sleep(cycles):
        pass
'''

MPS_CONTROL = r'''#!/bin/sh
# stand-in: logs its arguments, its pipe directory and what it read on stdin; a daemon
# started (-d) makes its pipe, unless GS_MPS_NO_S says it does not know -S (then it
# prints its usage and exits 0, as the 580 driver's does)
in=""
[ -t 0 ] || in=$(cat)
echo "$* | $CUDA_MPS_PIPE_DIRECTORY | $in" >> "$GS_MPS_LOG"
case "$*" in
    "-S -d") [ -n "$GS_MPS_NO_S" ] && { echo "usage: ..."; exit 0; }; touch "$CUDA_MPS_PIPE_DIRECTORY/control" ;;
    "-d") touch "$CUDA_MPS_PIPE_DIRECTORY/control" ;;
esac
'''


def check(d):
    t = Tap()
    standin.install(d, TORCH)
    bindir = os.path.join(d, "bin")
    os.mkdir(bindir)
    ctl = os.path.join(bindir, "nvidia-cuda-mps-control")
    with open(ctl, "w") as f:
        f.write(MPS_CONTROL)
    os.chmod(ctl, 0o755)
    log = os.path.join(d, "mps.log")
    out = os.path.join(d, "probe.json")
    env = dict(os.environ, PYTHONPATH=d, PATH=bindir + ":" + os.environ["PATH"], GS_MPS_LOG=log)
    env.pop("CUDA_MPS_PIPE_DIRECTORY", None)
    variants = "native,mps,mps_t50,native_spin"
    p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "h200_mps_probe.py"), "--out", out,
                        "--variants", variants, "--requests", "5", "--queued", "2", "--think-ms", "0.1",
                        "--cpus", ""], env=env, capture_output=True, text=True, timeout=120)
    if not t.ok(p.returncode == 0, "the probe runs with a stand-in torch", p.stderr[-2000:]):
        return t.done()
    r = json.load(open(out))
    v = r["variants"]
    t.ok(list(v) == variants.split(",") and all("ms" in x for x in v.values()),
         "every variant ran and reported", {k: x.get("error") for k, x in v.items()})
    t.ok(all(x["ms"]["request"]["n"] == 5 and x["ms"]["graph_queued"]["n"] == 2 for x in v.values()),
         "5 requests and 2 queued repetitions each", {k: x["ms"]["request"] for k, x in v.items()})
    req = {k: x["ms"]["request"]["p50"] for k, x in v.items()}
    t.ok(req["mps"] / req["native"] > 1.15 and abs(req["native_spin"] / req["native"] - 1) < 0.15,
         "the MPS variants ran as MPS clients, the native ones not (2.5 against 2 ms)", req)
    t.ok(v["mps_t50"]["sms"] == 66 and v["native"]["sms"] == 132, "the thread percentage reached the client",
         {k: x["sms"] for k, x in v.items()})
    t.ok(v["native_spin"]["sched_error"] is not None or v["native"]["sched_error"] is None,
         "the sched flag is tried only where asked, and its failure is said", {k: x["sched_error"] for k, x in v.items()})
    calls = open(log).read().splitlines()
    starts = [c for c in calls if c.startswith("-d ")]
    quits = [c for c in calls if c.endswith("| quit")]
    pipes = {c.split(" | ")[1] for c in starts + quits}
    t.ok(len(starts) == 1 and len(quits) == 2 and len(pipes) == 2,
         "one daemon for the MPS variants and one for the -S check, each asked to quit", calls)
    t.ok(any(c.startswith("-S -d ") for c in calls) and r["static_partitioning"]["started"],
         "the static partitioning check ran", r.get("static_partitioning"))
    t.ok("| mps | 132 |" in p.stdout and "(1.00)" in p.stdout, "the table is printed, with ratios to native",
         p.stdout[-1500:])
    # a daemon that does not know -S: its usage, exit 0, no pipe
    p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "h200_mps_probe.py"), "--out", out,
                        "--variants", "native", "--requests", "2", "--queued", "1", "--think-ms", "0.1",
                        "--cpus", ""], env=dict(env, GS_MPS_NO_S="1"), capture_output=True, text=True,
                       timeout=120)
    sp = json.load(open(out)).get("static_partitioning", {}) if p.returncode == 0 else {}
    t.ok(sp.get("started") is False and "usage" in sp.get("said", ""),
         "a daemon that prints its usage to -S is not taken for started", sp or p.stderr[-1500:])
    return t.done()


def main():
    return in_tempdir("gs-mps-probe-test-", check)


if __name__ == "__main__":
    sys.exit(main())
