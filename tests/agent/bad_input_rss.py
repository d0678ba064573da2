#!/usr/bin/python3
"""The agent's resident memory under bad input (docs/benchmarks.md, "Agent footprint").

Not a test (no pass/fail): starts `gpuslice agent` on the simulated backend against the
Python kubelet of fakekubelet.py, then sends its memory plugin 3,000 random byte strings
as Allocate requests, 20 requests of 64 MiB and 40 of 3 MiB, and prints VmRSS after each
step and 3 s after the last.
    /usr/bin/python3 tests/agent/bad_input_rss.py [BUILD_DIR]      (default: build)"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if len(sys.argv) > 1:
    os.environ["GS_BUILD_DIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, HERE)
import fakekubelet as fk  # noqa: E402

import grpc  # noqa: E402


def main():
    tmp = tempfile.mkdtemp(prefix="gsb", dir="/tmp")  # short: unix socket paths
    dp, pr = fk.load_protos(tmp)
    kdir = os.path.join(tmp, "dp")
    os.makedirs(kdir)
    kub = fk.Kubelet(dp, kdir)
    kub.start()
    agent = subprocess.Popen([os.path.join(fk.BUILD, "gpuslice"), "agent", "--backend", "simulated",
                              "--kubelet-dir", kdir, "--state-root", os.path.join(tmp, "state"),
                              "--interposer-path", "/dev/null", "--reclaim-interval", "0",
                              "--log-level", "error"], stderr=subprocess.DEVNULL)

    def rss():
        for line in open("/proc/%d/status" % agent.pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

    def flood(what, requests):
        for raw in requests:
            try:
                mem.allocate(raw=raw)
            except grpc.RpcError:
                pass
        print("rss_kib after %s: %d" % (what, rss()))

    try:
        regs = kub.wait_registrations(3)
        ep = {r[1].resource_name: r[1].endpoint for r in regs}
        mem = fk.Plugin(dp, os.path.join(kdir, ep["gpuslice.io/gpu-memory"]))
        time.sleep(0.5)
        print("rss_kib idle: %d" % rss())
        rnd = random.Random(1)
        flood("3000 random Allocate requests",
              (bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 300))) for _ in range(3000)))
        flood("20 requests of 64 MiB", (b"\x0a\x05" + b"x" * (64 << 20) for _ in range(20)))
        flood("40 requests of 3 MiB", (b"\x0a\x05" + b"x" * (3 << 20) for _ in range(40)))
        time.sleep(3)
        print("rss_kib 3 s later: %d" % rss())
        mem.close()
    finally:
        agent.terminate()
        agent.wait(timeout=10)
        kub.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
