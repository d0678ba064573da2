"""bench/shares.py's solo reference (bench/common.py solo_reference) without a GPU: the
mean of the first and last solo runs, or the one that kept the GPU busy when the other
was still starting (a cold GPU and a short --lead: the H200's first solo of 2026-12-01
kept it busy 0.69 of its time and counted 29 % fewer matmuls)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Tap  # noqa: E402

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SRC, "bench"))
import common  # noqa: E402


def main():
    t = Tap()
    ref, dropped = common.solo_reference([(421.6, 0.688), (596.0, 0.976)])
    t.ok(ref == 596.0 and dropped == 0, "a first solo still starting is dropped: the last is the reference",
         (ref, dropped))
    ref, dropped = common.solo_reference([(600.0, 0.97), (450.0, 0.70)])
    t.ok(ref == 600.0 and dropped == 1, "so is a last one", (ref, dropped))
    ref, dropped = common.solo_reference([(4653.6, 0.955), (4588.0, 0.939)])
    t.ok(abs(ref - 4620.8) < 1e-9 and dropped is None, "two busy solos: their mean", (ref, dropped))
    ref, dropped = common.solo_reference([(10.0, 0.5), (30.0, 0.6)])
    t.ok(ref == 20.0 and dropped is None, "both low (a loop that never fills the GPU): their mean, nothing dropped",
         (ref, dropped))
    ref, dropped = common.solo_reference([(10.0, None), (30.0, 0.5)])
    t.ok(ref == 10.0 and dropped == 1, "a solo without a GPU-time reading is not taken for a slow one",
         (ref, dropped))
    t.done()


if __name__ == "__main__":
    sys.exit(main())
