"""bench/h200_residual_probe.py without a GPU: a stand-in torch (and torchvision) on
PYTHONPATH plays a GPU that keeps the context that ran last. Work done in the helper
process (the probe starts it with --helper) leaves a marker file; work done in A's
process takes it away; A's request (the graph's replay) takes 2 ms, or 6 ms when the
marker is there (the switch back). The test checks that the probe runs every condition
in both processes and puts the switch where the stand-in put it: after the helper's
work, and not after A's own work or A's prime. Device time is short; a probe that
breaks there wastes a whole call."""
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
MARK = os.environ["GS_PROBE_MARK"]
HELPER = "--helper" in sys.argv


def _ran():
    """This process's context ran: the helper's leaves the mark, A's takes it away."""
    if HELPER:
        open(MARK, "w").close()
    elif os.path.exists(MARK):
        os.unlink(MARK)


class T:
    def add_(self, *a):
        _ran()
        return self

    def copy_(self, *a):
        _ran()
        return self


def zeros(*a, **k):
    return T()


ones = empty = randn = zeros


def mm(*a, **k):
    _ran()


class _Graph:
    def replay(self):
        switch = os.path.exists(MARK)
        _ran()
        time.sleep(0.006 if switch else 0.002)


class cuda(_Cuda):
    CUDAGraph = _Graph

    @staticmethod
    def get_device_name():
        return "stand-in"
'''


def check(d):
    t = Tap()
    standin.install(d, TORCH)
    out = os.path.join(d, "probe.json")
    env = dict(os.environ, PYTHONPATH=d, GS_PROBE_MARK=os.path.join(d, "mark"))
    p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "h200_residual_probe.py"), "--out", out,
                        "--requests", "4", "--think-ms", "0.2", "--cpus", "", "--helper-cpus", ""],
                       env=env, capture_output=True, text=True, timeout=120)
    if not t.ok(p.returncode == 0, "the probe runs with a stand-in torch", p.stderr[-2000:]):
        return t.done()
    r = json.load(open(out))
    rows = {x["condition"]: x for x in r["summary"]}
    conds = ["idle", "own_sweep", "own_gemm", "other_none", "other_tiny", "other_sweep", "other_gemm",
             "other_gemm_w1", "own_gemm_w1", "idle_prime", "other_gemm_prime", "other_gemm_prime0"]
    t.ok(list(rows) == conds and all(x["n"] == 4 for x in rows.values()),
         "every condition, 4 requests each, in the order of the table", sorted(rows))
    t.ok(all(len(r["samples"][c]) == 4 for c in conds), "the samples are kept", list(r["samples"]))
    switched = ["other_tiny", "other_sweep", "other_gemm", "other_gemm_w1"]
    t.ok(all(rows[c]["p50_ratio"] >= 2.0 for c in switched),
         "after the helper's work A pays the switch (6 against 2 ms)", {c: rows[c] for c in switched})
    clean = ["own_sweep", "own_gemm", "own_gemm_w1", "other_none", "idle_prime", "other_gemm_prime",
             "other_gemm_prime0"]
    t.ok(all(rows[c]["p50_ratio"] < 1.5 for c in clean),
         "after A's own work, the handshake alone, or A's prime, it does not",
         {c: rows[c]["p50_ratio"] for c in clean})
    t.ok(rows["idle"]["p50_ratio"] == 1.0 and "| other_gemm_prime |" in p.stdout,
         "ratios are against idle, and the table is printed", p.stdout)
    return t.done()


def main():
    return in_tempdir("gs-probe-test-", check)


if __name__ == "__main__":
    sys.exit(main())
