"""bench/overhead_sim.c on the simulated driver, through bench/overhead.py --inproc: it
builds with the toolchain alone, the interposer's wrappers and the simulated driver's own
entry points (gsfake_entry) are told apart, and overhead.py reads its line under a plain
slice, a compute share, a critical peer and a critical tenant. Its figures are the interposer's CPU work
(docs/benchmarks.md); timing is the benchmark's business, not this test's."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Tap  # noqa: E402

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SRC, "build"))


def main():
    t = Tap()
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "overhead-sim")
        # Under a sanitizer build the program carries the same runtime, which must come
        # before the preloaded interposer built with it.
        san = ["-fsanitize=" + os.environ["SAN"]] if os.environ.get("SAN") else []
        cc = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror"] + san + ["-o", exe,
                             os.path.join(SRC, "bench", "overhead_sim.c"), "-ldl"], capture_output=True, text=True)
        t.ok(cc.returncode == 0, "bench/overhead_sim.c builds with the toolchain alone", cc.stderr[-800:])
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"))
        alone = subprocess.run([exe, "3"], capture_output=True, text=True, env=env, timeout=120)
        line = json.loads(alone.stdout) if alone.returncode == 0 else {}
        t.ok(line.get("interposed") is False and line.get("simulated") is True and line.get("rounds") == 3,
             "without the interposer: the two entry points are the same function", alone.stdout + alone.stderr)
        nodrv = subprocess.run([exe, "3"], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, LD_LIBRARY_PATH=d))
        t.ok(nodrv.returncode != 0 and "LD_LIBRARY_PATH" in nodrv.stderr,
             "no simulated driver in the path: it says where to point", nodrv.stderr)
        for extra in ([], ["--inproc-compute", "50"], ["--inproc-compute", "50", "--inproc-critical-peer"],
                      ["--inproc-critical"]):
            out = os.path.join(d, "o.json")
            p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "overhead.py"), "--bin", "true",
                                "--skip-process", "--inproc", exe, "--inproc-reps", "1", "--cpu", "",
                                "--gpuslice", os.path.join(BUILD, "gpuslice"), "--memory", "1Gi", "--out", out]
                               + extra, capture_output=True, text=True, env=env, timeout=300)
            res = json.load(open(out)) if p.returncode == 0 and os.path.exists(out) else {}
            inproc = res.get("summary", {}).get("inproc", {})
            t.ok(inproc.get("all_interposed") is True and "launch_delta_us" in inproc and
                 "alloc_pair_ratio" in inproc and
                 inproc.get("compute_share") == (50 if "--inproc-compute" in extra else 0) and
                 inproc.get("critical_peer") == ("--inproc-critical-peer" in extra) and
                 inproc.get("critical") == ("--inproc-critical" in extra),
                 "overhead.py --inproc %s: the wrappers against the driver's own, one summary"
                 % (" ".join(extra) or "(a memory slice)"), (p.stderr[-800:], inproc))
        logs = os.path.join(d, "logs")
        p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "overhead.py"), "--bin", "true",
                            "--skip-process", "--inproc", exe, "--inproc-reps", "2", "--cpu", "",
                            "--gpuslice", os.path.join(BUILD, "gpuslice"), "--memory", "1Gi",
                            "--inproc-compute", "50", "--inproc-logs", logs],
                           capture_output=True, text=True, env=dict(env, GPUSLICE_LOG_LEVEL="debug"), timeout=300)
        kept = sorted(os.listdir(logs)) if os.path.isdir(logs) else []
        said = [open(os.path.join(logs, x)).read() for x in kept]
        t.ok(p.returncode == 0 and kept == ["inproc-1.log", "inproc-2.log"]
             and all("compute 50%" in x and "gpuslice[interposer" in x for x in said),
             "--inproc-logs: each in-process run's interposer log, here at debug", (p.stderr[-800:], kept, said[:1]))
    t.done()


if __name__ == "__main__":
    sys.exit(main())
