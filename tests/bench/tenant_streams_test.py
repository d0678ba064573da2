"""bench/common.py's start_tenant and finish_tenant, which latency.py and shares.py start
their tenants with: a tenant that writes more to stderr than a pipe holds (a debug log
level) while the harness still waits for another must not stall. On the H200 a tenant
logging at debug level into a pipe read only at the end stopped running (session 13)."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Tap  # noqa: E402

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SRC, "bench"))
import common  # noqa: E402

# 400 KiB of log on stderr, then its JSON line on stdout.
TALKER = [sys.executable, "-c",
          "import sys\n"
          "for i in range(8000): sys.stderr.write('gpuslice[interposer 1] debug: line %05d %s\\n' % (i, 'x' * 30))\n"
          "print('{\"done\": 1}')"]
# Waits until the talker has finished, so it is read first only if the talker never stalls.
WAITER = [sys.executable, "-c",
          "import os, sys, time\n"
          "path = sys.argv[1]\n"
          "deadline = time.time() + 20\n"
          "while not os.path.exists(path) and time.time() < deadline: time.sleep(0.01)\n"
          "print('{\"saw_talker\": %d}' % os.path.exists(path))"]


def main():
    t = Tap()
    d = tempfile.mkdtemp(prefix="gs-streams-")
    mark = os.path.join(d, "talker-done")
    talker = common.start_tenant(["sh", "-c", '"$@" && touch ' + mark, "sh"] + TALKER, dict(os.environ))
    waiter = common.start_tenant(WAITER + [mark], dict(os.environ))
    out_w, err_w = common.finish_tenant(waiter, 60)  # read first, as latency.py reads A first
    out_t, err_t = common.finish_tenant(talker, 60)
    t.ok('"saw_talker": 1' in out_w, "the talker finished while the harness waited for the other tenant",
         out_w + err_w)
    lines = err_t.splitlines()
    t.ok(len(lines) == 8000 and lines[-1].startswith("gpuslice[interposer 1] debug: line 07999"),
         "its whole stderr is read back, in order", (len(lines), lines[-1:] if lines else None))
    t.ok(out_t.strip() == '{"done": 1}', "its stdout is its own", out_t)
    t.done()


if __name__ == "__main__":
    sys.exit(main())
