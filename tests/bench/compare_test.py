"""bench/compare.sh without a GPU. Two stub source trees whose `make minimal` makes a
gpuslice that runs the real build on the simulated GPU; a stand-in torch (standin.py) whose
matmuls take a set time and whose allocations stop at the slice's cap; stand-in nvcc and
nvidia-smi. The new tree's build makes every matmul under gpuslice twice as slow. The test
checks that every step runs, takes turns old/new as documented, writes a JSON file per
measurement, and that the table finds the memory figures the same and the share and the
best-effort throughput moved. Device time is short; a script that breaks there wastes a
whole call."""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Tap, in_tempdir  # noqa: E402

import standin  # noqa: E402  (beside this file)

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SRC, "build"))

TORCH = r'''
uint8 = "dtype"
MATMUL_S = float(os.environ.get("GS_STANDIN_MATMUL_MS", "1")) / 1000


class OutOfMemoryError(RuntimeError):
    pass


def _cap():
    """The slice's memory cap from its limits file (16 GiB without a slice)."""
    try:
        with open(os.path.join(os.environ["GPUSLICE_STATE_DIR"], "limits")) as f:
            for line in f:
                k, _, v = line.partition("=")
                if k.strip() == "memory" and int(v) > 0:
                    return int(v)
    except (KeyError, OSError, ValueError):
        pass
    return 16 << 30


_held = [0]


class T:
    def __matmul__(self, other):
        time.sleep(MATMUL_S)
        return T()

    def double(self):
        return self

    cpu = double

    def add_(self, *a):
        return self


def randn(*a, **k):
    return T()


zeros = randn


def manual_seed(n):
    pass


def allclose(*a, **k):
    return True


def empty(n, **k):
    if _held[0] + n > _cap():
        raise OutOfMemoryError("stand-in: over the slice")
    _held[0] += n
    return T()


class _Graph:
    def replay(self):
        time.sleep(0.001)


class cuda(_Cuda):
    CUDAGraph = _Graph

    @staticmethod
    def init():
        pass

    @staticmethod
    def mem_get_info():
        return _cap() - _held[0], _cap()

    @staticmethod
    def memory_allocated():
        return _held[0]

    memory_reserved = memory_allocated
'''

# what the stand-in nvcc's programs print: bench/overhead.cu's line and overhead_inproc.cu's
PROGRAMS = {
    "overhead": '{"startup_ms": 200.0, "launch_us": 3.6, "alloc_pair_us": 66.0}',
    "overhead_inproc": '{"launch_real_us": 3.4, "launch_hooked_us": 3.5, "launch_delta_us": 0.1, '
                       '"alloc_pair_real_us": 64.0, "alloc_pair_hooked_us": 64.4, "alloc_pair_ratio": 1.006, '
                       '"interposed": true}',
}


def script(path, body):
    """An executable shell script at path; returns path."""
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def tree(d, name, matmul_ms):
    """A stub source tree: `make minimal BUILD=B` makes B-minimal/gpuslice, which runs the
    real build on the simulated GPU with the stand-in's matmuls taking matmul_ms, and
    B-minimal/libgpuslice.so, the real interposer."""
    t = os.path.join(d, name)
    os.mkdir(t)
    wrapper = ('cmd=$$1; shift\\nexport GS_STANDIN_MATMUL_MS=%s\\nexec "%s" "$$cmd" --simulated "$$@"'
               % (matmul_ms, os.path.join(BUILD, "gpuslice")))
    with open(os.path.join(t, "Makefile"), "w") as f:
        f.write("minimal:\n\tmkdir -p $(BUILD)-minimal\n"
                "\tprintf '#!/bin/sh\\n%s\\n' > $(BUILD)-minimal/gpuslice\n"
                "\tchmod +x $(BUILD)-minimal/gpuslice\n"
                "\tcp %s $(BUILD)-minimal/libgpuslice.so\n" % (wrapper, os.path.join(BUILD, "libgpuslice.so")))
    return t


def main():
    return in_tempdir("gs-compare-test-", check)


def check(d):
    t = Tap()
    standin.install(d, TORCH)
    bindir = os.path.join(d, "bin")
    os.mkdir(bindir)
    for name, line in PROGRAMS.items():
        script(os.path.join(d, name), "echo '%s'" % line)
    script(os.path.join(bindir, "nvcc"),
           'out=; src=\nwhile [ $# -gt 0 ]; do case $1 in -o) out=$2; shift ;; *.cu) src=$1 ;; esac; shift; done\n'
           'echo "$src" >> "%s/nvcc.log"\ncp "%s/$(basename "$src" .cu)" "$out"' % (d, d))
    script(os.path.join(bindir, "nvidia-smi"),
           'case "$*" in\n'
           '  *query-compute-apps*) ;;\n'
           '  *memory.total*) echo "memory.total [MiB], memory.used [MiB], memory.free [MiB]"; '
           'echo "16384 MiB, 0 MiB, 16384 MiB" ;;\n'
           '  *name,driver_version*) echo "stand-in GPU, 0.0, 700.00 W" ;;\n'
           '  *) while :; do echo "1980, 300"; sleep 0.05; done ;;\n'
           'esac')
    # New matmuls four times as slow: a contrast that host jitter under load (a sleep
    # of 2 ms taking 3) cannot hide.
    old, new = tree(d, "old", 2), tree(d, "new", 8)
    out, work = os.path.join(d, "out"), os.path.join(d, "work")
    env = dict(os.environ, PYTHONPATH=d, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), PYTHON=sys.executable)
    cmd = ["sh", os.path.join(SRC, "bench", "compare.sh"), "--old", old, "--new", new, "--out", out, "--work", work,
           "--rounds", "2", "--secs", "0.4", "--thinks", "1", "--requests", "10", "--overhead-reps", "2",
           "--inproc-reps", "2", "--pin", "", "--extra-overhead", "--inproc-compute 50", "--extra-shares", "--lead 1 --warm 0.1 --memory 2Gi",
           "--extra-latency", "--reps 1 --lead 0.5 --first-lead 2 --b-phase 0.5 --est-ms 1 --memory 2Gi"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    t.ok(p.returncode == 0 and "FAILED" not in p.stdout, "compare.sh runs every step with stand-ins",
         p.stdout[-3000:] + p.stderr[-2000:])
    raw = os.path.join(out, "raw")
    files = sorted(os.listdir(raw)) if os.path.isdir(raw) else []
    want = ["latency.json", "memory-new.json", "memory-old.json", "overhead-new-1.json", "overhead-new-2.json",
            "overhead-old-1.json", "overhead-old-2.json", "shares.json"]
    t.ok(all(f in files for f in want), "a JSON file per measurement", files)
    t.ok(os.path.exists(os.path.join(work, "old-minimal", "gpuslice"))
         and os.path.exists(os.path.join(work, "new-minimal", "gpuslice")),
         "each tree built with make minimal BUILD=WORK/old|new", os.listdir(work) if os.path.isdir(work) else "")
    log = open(os.path.join(out, "compare.log")).read() if os.path.exists(os.path.join(out, "compare.log")) else ""
    steps = re.findall(r"(overhead-\w+-\d|memory-\w+) done", log)
    t.ok(steps == ["memory-old", "memory-new", "overhead-old-1", "overhead-new-1", "overhead-new-2",
                   "overhead-old-2"], "memory old then new; overhead old, new, new, old", log)
    shares = json.load(open(os.path.join(raw, "shares.json"))) if "shares.json" in files else {}
    rounds = {b: [x["round"] for x in v["pairs"].get("30/70", [])] for b, v in shares.get("builds", {}).items()}
    t.ok(rounds == {"old": [1, 2], "new": [1, 2]} and shares.get("solo_matmuls_per_s", 0) > 0,
         "shares: the 30/70 pair twice per build against one solo reference", json.dumps(shares)[:1500])
    lat = json.load(open(os.path.join(raw, "latency.json"))) if "latency.json" in files else {}
    t.ok(list(lat.get("configs", {})) == ["native", "gs_defaults@old", "gs_defaults@new", "gs_defaults@new#2",
                                          "gs_defaults@old#2"],
         "latency: native, then the defaults of old, new, new, old", list(lat.get("configs", {})))
    table = json.load(open(os.path.join(out, "compare.json"))) if os.path.exists(os.path.join(out, "compare.json")) else {}
    rows = {r["figure"]: r for r in table.get("rows", [])}
    mem = [r for r in rows.values() if r["claim"] == "memory cap"]
    t.ok(len(mem) >= 9 and all(r["same"] for r in mem if r["kind"] != "nvml"),
         "the memory figures come out the same for both builds", json.dumps(mem, indent=1)[:3000])
    got = [r for r in mem if r["figure"] == "default: bytes PyTorch got under the cap"]
    t.ok(got and got[0]["old"] == [4 << 30], "the stand-in filled the 4 GiB slice exactly", got)
    ovh = [r for r in rows.values() if r["claim"] == "overhead"]
    t.ok(len(ovh) == 4 and all(r["same"] and len(r["old"]) == 2 for r in ovh),
         "the overhead figures, two rounds each, the same", json.dumps(ovh, indent=1)[:2000])
    t.ok("launch, in one process (a 50 % share): hooked - libcuda (us)" in rows,
         "--extra-overhead reaches overhead.py: the in-process row says its 50 % share", list(rows))
    share = [r for r in rows.values() if r["claim"] == "compute shares"]
    t.ok(len(share) == 2 and all(r["same"] is False and r["new_mean"] < 0.8 * r["old_mean"] for r in share),
         "the new build's slower matmuls show in the shares, outside what a run moves by",
         json.dumps(share, indent=1))
    b = [r for r in rows.values() if "best-effort throughput" in r["figure"]]
    t.ok(len(b) == 1 and b[0]["same"] is False and len(b[0]["old"]) == 2,
         "and in the best-effort tenant's throughput next to the critical one", json.dumps(b, indent=1))
    md = open(os.path.join(out, "compare.md")).read() if os.path.exists(os.path.join(out, "compare.md")) else ""
    t.ok("| memory cap |" in md and "**NO**" in md and "figures within what a run of one build moves by" in md
         and "stand-in GPU" in md, "compare.md: the table, the verdicts, the GPU", md[:3000])
    nvcc = open(os.path.join(d, "nvcc.log")).read().split() if os.path.exists(os.path.join(d, "nvcc.log")) else []
    t.ok(len(nvcc) == 2, "the overhead programs compiled once for both builds", nvcc)
    p = subprocess.run(cmd[:2] + ["--help"], capture_output=True, text=True)
    t.ok(p.returncode == 0 and "--old DIR" in p.stdout and "--pack" in p.stdout, "--help", p.stdout + p.stderr)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
