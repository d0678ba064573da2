"""gpuslice run's --memory: a bare number is refused with the hint (nvidia-smi and most
sharing tools count in MiB, so `--memory 2048` never means 2 KiB); units are taken. TAP."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

BUILD = os.environ.get("GS_BUILD_DIR", "build")
GS = os.path.join(BUILD, "gpuslice")
t = Tap()
root = tempfile.mkdtemp(prefix="gs-runflags-")


def run(mem):
    return subprocess.run([GS, "run", "--simulated", "--memory", mem, "--state-root", root, "--", "true"],
                          capture_output=True, text=True, timeout=60)


p = run("2048")
t.ok(p.returncode == 2 and "--memory: memory quantity '2048' has no unit: write 2048Mi for MiB, or 2048B" in p.stderr,
     "--memory 2048 is refused with the hint (exit 2)", p.stderr)
for ok_value, shown in (("2048Mi", "2 GiB"), ("2048B", "2 KiB"), ("1.5GiB", "1.50 GiB")):
    p = run(ok_value)
    t.ok(p.returncode == 0 and ("memory : %s" % shown) in p.stderr, "--memory %s is %s" % (ok_value, shown),
         p.stderr[-600:])
os.rmdir(root)
sys.exit(t.done())
