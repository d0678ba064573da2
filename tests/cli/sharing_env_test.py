"""--sharing mps: the interposer hands MPS the per-client settings of the
slice's limits (client priority, active thread percentage), over what the
workload's environment says, at process start and again when CUDA starts.
Runs `gpuslice run --simulated`; TAP output."""
import os
import shutil
import subprocess
import sys
import tempfile

BUILD = os.environ.get("GS_BUILD_DIR", "build")
GS = os.path.join(BUILD, "gpuslice")


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

tap = Tap()
ok = tap.ok


root = tempfile.mkdtemp(prefix="gs-sharing-")
POD = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "100", "CUDA_MPS_CLIENT_PRIORITY": "0"}
SHOW = ["sh", "-c", 'echo "threads=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE prio=$CUDA_MPS_CLIENT_PRIORITY"']


def run(flags, cmd, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([GS, "run", "--simulated", "--memory", "1Gi", "--state-root", root] + flags + ["--"] + cmd,
                          capture_output=True, text=True, env=e, timeout=60)


def kept_limits(flags):
    """`true` run alone under the state root with flags, its slice kept: the run, and the
    text of the limits file(s) it left."""
    shutil.rmtree(root)
    os.mkdir(root)
    r = run(flags + ["--keep-state"], ["true"])
    paths = [os.path.join(root, d, "limits") for d in os.listdir(root)]
    return r, [open(p).read() for p in paths if os.path.exists(p)]


r = run(["--sharing", "mps", "--mps-threads", "40"], SHOW, POD)
ok(r.returncode == 0 and r.stdout.strip() == "threads=40 prio=1",
   "best-effort on MPS: 40% threads and below-normal priority, over the Pod's 100% / normal", (r.stdout, r.stderr))
ok("sharing: MPS client, below-normal priority, 40% of the threads" in r.stderr,
   "gpuslice run says what MPS settings the slice has", r.stderr)
r = run(["--critical", "--sharing", "mps"], SHOW, {"CUDA_MPS_CLIENT_PRIORITY": "1"})
ok(r.returncode == 0 and r.stdout.strip() == "threads= prio=0",
   "critical on MPS: normal priority, threads not limited", (r.stdout, r.stderr))
r = run([], SHOW, POD)
ok(r.returncode == 0 and r.stdout.strip() == "threads=100 prio=0",
   "time-slicing (default): the environment is left alone", (r.stdout, r.stderr))
r = run(["--mps-threads", "40"], SHOW)
ok(r.returncode == 2 and "--mps-threads needs --sharing mps" in r.stderr, "--mps-threads alone is refused", r.stderr)
r = run(["--sharing", "bogus"], SHOW)
ok(r.returncode == 2 and "not timeslice or mps" in r.stderr, "an unknown --sharing is refused clearly", r.stderr)
r = run(["--sharing", "mps", "--mps-threads", "0"], SHOW)
ok(r.returncode == 2 and "--mps-threads" in r.stderr, "--mps-threads 0 is refused", r.stderr)

r, texts = kept_limits(["--sharing", "mps", "--yield", "shrink", "--green-sms", "64"])
ok(r.returncode == 0 and any("yield = shrink" in t and "green_sms = 64" in t for t in texts) and
   "kernels run on 64 SMs" in r.stderr,
   "--yield shrink --green-sms 64: the slice's limits say so, and run tells", (r.stderr, texts))
r = run(["--green-sms", "64"], SHOW)
ok(r.returncode == 2 and "--green-sms needs --yield shrink" in r.stderr, "--green-sms alone is refused", r.stderr)
r = run(["--yield", "shrink", "--green-sms", "lots"], SHOW)
ok(r.returncode == 2 and "--green-sms" in r.stderr and "whole number" in r.stderr,
   "a malformed --green-sms is refused clearly", r.stderr)

# The guard: a best-effort command that gates gets it; others are refused.
r, texts = kept_limits(["--compute", "50", "--guard", "450"])
ok(r.returncode == 0 and any("guard_us = 450" in t and "yield = gate" in t for t in texts) and
   "should end 450 us before its next request" in r.stderr,
   "--guard 450: the slice's limits say so, and run tells", (r.stderr, texts))
for flags, why in ((["--critical"], "a critical command"), (["--yield", "bound"], "--yield bound"),
                   (["--sharing", "mps"], "--sharing mps (bound by default)")):
    r = run(["--guard", "600"] + flags, SHOW)
    ok(r.returncode == 2 and "--guard is for a best-effort command with --yield gate" in r.stderr,
       f"--guard with {why} is refused", r.stderr)
r, texts = kept_limits(["--compute", "50"])
ok(r.returncode == 0 and any("guard_us = 600" in t for t in texts) and "end 600 us before" in r.stderr,
   "by default a best-effort command gets the guard at 600 us", (r.stderr, texts))
for off in ("off", "0"):
    r, texts = kept_limits(["--compute", "50", "--guard", off])
    ok(r.returncode == 0 and texts and all("guard_us = 0" in t for t in texts) and "guard  :" not in r.stderr,
       f"--guard {off}: no guard", (r.stderr, texts))
for flags in (["--critical"], ["--sharing", "mps"], ["--yield", "bound"]):
    r, texts = kept_limits(flags)
    ok(r.returncode == 0 and texts and all("guard_us = 0" in t for t in texts),
       f"{' '.join(flags)}: no guard by default", (r.stderr, texts))
for bad, says in (("soon", "whole number"), ("100001", "outside 0..100000")):
    r = run(["--guard", bad], SHOW)
    ok(r.returncode == 2 and "--guard" in r.stderr and says in r.stderr, f"--guard {bad} is refused clearly",
       r.stderr)

# The power guard: every best-effort command gets it (93 % by default, on either
# backend); a critical one is refused it, and gets none.
for flags in (["--compute", "50"], ["--memory", "1Gi"], ["--sharing", "mps"]):
    r, texts = kept_limits(flags)
    ok(r.returncode == 0 and any("power_guard = 93" in t for t in texts) and
       "clock below 93 % of its maximum" in r.stderr,
       f"{' '.join(flags)}: the power guard at 93 % by default, and run tells", (r.stderr, texts))
r, texts = kept_limits(["--compute", "50", "--power-guard", "88"])
ok(r.returncode == 0 and any("power_guard = 88" in t for t in texts), "--power-guard 88: the slice's limits say so",
   (r.stderr, texts))
for off in ("off", "0"):
    r, texts = kept_limits(["--compute", "50", "--power-guard", off])
    ok(r.returncode == 0 and texts and all("power_guard = 0" in t for t in texts) and "power  :" not in r.stderr,
       f"--power-guard {off}: no power guard", (r.stderr, texts))
r = run(["--critical", "--power-guard", "90"], SHOW)
ok(r.returncode == 2 and "--power-guard is for a best-effort command" in r.stderr,
   "--power-guard with --critical is refused", r.stderr)
r, texts = kept_limits(["--critical"])
ok(r.returncode == 0 and texts and all("power_guard = 0" in t for t in texts), "--critical: no power guard",
   (r.stderr, texts))
for bad, says in (("hot", "whole number"), ("150", "outside 0..100")):
    r = run(["--power-guard", bad], SHOW)
    ok(r.returncode == 2 and "--power-guard" in r.stderr and says in r.stderr,
       f"--power-guard {bad} is refused clearly", r.stderr)

# The prime: a critical command on time-slicing gets it (250 us by default);
# others are refused, and get none.
r, texts = kept_limits(["--critical"])
ok(r.returncode == 0 and any("prime_us = 250" in t and "priority = critical" in t for t in texts) and
   "switched back to this command's context 250 us before" in r.stderr,
   "by default a critical command gets the prime at 250 us, and run tells", (r.stderr, texts))
r, texts = kept_limits(["--critical", "--prime", "400"])
ok(r.returncode == 0 and any("prime_us = 400" in t for t in texts), "--prime 400: the slice's limits say so",
   (r.stderr, texts))
for off in ("off", "0"):
    r, texts = kept_limits(["--critical", "--prime", off])
    ok(r.returncode == 0 and texts and all("prime_us = 0" in t for t in texts) and "prime  :" not in r.stderr,
       f"--prime {off}: no prime", (r.stderr, texts))
for flags, why in ((["--compute", "50"], "a best-effort command"),
                   (["--critical", "--sharing", "mps"], "--sharing mps")):
    r = run(["--prime", "400"] + flags, SHOW)
    ok(r.returncode == 2 and "--prime is for a --critical command on --sharing timeslice" in r.stderr,
       f"--prime with {why} is refused", r.stderr)
    r, texts = kept_limits(flags)
    ok(r.returncode == 0 and texts and all("prime_us = 0" in t for t in texts),
       f"{why}: no prime by default", (r.stderr, texts))
for bad, says in (("soon", "whole number"), ("100001", "outside 0..100000")):
    r = run(["--critical", "--prime", bad], SHOW)
    ok(r.returncode == 2 and "--prime" in r.stderr and says in r.stderr, f"--prime {bad} is refused clearly",
       r.stderr)

# A workload that raises its own thread percentage after start-up gets the
# slice's value back when it first reaches the driver (the interposer
# initialises before the real driver starts).
prog = r"""
import ctypes
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
libc.setenv(b"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", b"100", 1)
before = libc.getenv(b"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").decode()
cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuMemAlloc_v2  # resolving a hooked entry point, as the runtime does first: the interposer initialises
after = libc.getenv(b"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").decode()
assert cuda.cuInit(0) == 0
print(before, after)
"""
r = run(["--sharing", "mps", "--mps-threads", "30"], ["/usr/bin/python3", "-c", prog])
ok(r.returncode == 0 and r.stdout.split() == ["100", "30"],
   "a value the workload set after start is put back when CUDA starts", (r.stdout, r.stderr))
sys.exit(tap.done())
