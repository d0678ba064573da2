"""The dashboard in a real browser: the monitor serves a state root with
real tenants (the simulated GPU, the real interposer) -- one finished after
its cap refused it, one latency-critical tenant serving requests, one with a
share launching kernels and holding memory, one that never used CUDA -- and
headless Chromium loads the page, runs its script, and the DOM it leaves is
checked: the GPU header, each slice in its state, charts with data points,
the reason Pods are unknown. Screenshots (wide and narrow) are kept in
$GS_BUILD_DIR/test-logs/dashboard-*.png. Skips (77) without chromium. TAP."""
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402
import tenants  # noqa: E402

BUILD = os.path.abspath(os.environ.get("GS_BUILD_DIR", "build"))
GS = os.path.join(BUILD, "gpuslice")
WORKER = os.path.join(BUILD, "tests", "gs-worker")
LOGS = os.path.join(BUILD, "test-logs")

chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("1..0 # skip chromium not installed (Debian: apt-get install chromium)")
    sys.exit(77)

tap = Tap()
ok = tap.ok


class Dom(html.parser.HTMLParser):
    """Elements by their classes and data- attributes, and the text inside each."""

    def __init__(self):
        super().__init__()
        self.elems, self.stack = [], []

    def handle_starttag(self, tag, attrs):
        e = {"tag": tag, "attrs": dict(attrs), "text": ""}
        e["classes"] = (e["attrs"].get("class") or "").split()
        self.elems.append(e)
        if tag not in ("br", "img", "meta", "link", "input", "polyline", "path", "line"):
            self.stack.append(e)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break

    def handle_data(self, data):
        for e in self.stack:
            e["text"] += data

    def find(self, cls=None, **attrs):
        return [e for e in self.elems if (cls is None or cls in e["classes"]) and
                all(e["attrs"].get(k.replace("_", "-")) == v for k, v in attrs.items())]


def browse(url, extra, size="1280,1000"):
    # --virtual-time-budget lets the page's fetches and timers run before the dump.
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
                           "--window-size=" + size, "--virtual-time-budget=6000"] + extra + [url],
                          capture_output=True, text=True, timeout=120)


root = tempfile.mkdtemp(prefix="gs-dash-")
home = tempfile.mkdtemp(prefix="gs-dash-home-")  # chromium's profile, not the user's
os.environ["HOME"] = home
env = dict(os.environ)


def run(args):
    return subprocess.run(tenants.argv(root, args), capture_output=True, text=True, env=env, timeout=120)


# Finished: the demo hits its 1 GiB cap once, then exits.
done = run(["--memory", "1Gi", "--compute", "30", "--", os.path.join(BUILD, "gpuslice-demo"), "256"])
ok(done.returncode == 0, "a tenant ran to its end on the simulated GPU (finished, refused once)", done.stderr[-300:])
# Never used CUDA: a slice held by a command that stays on the CPU.
cpu = run(["--memory", "256Mi", "--", "true"])
ok(cpu.returncode == 0, "a slice held by a command that never used CUDA", cpu.stderr[-300:])
# Live: a latency-critical tenant's requests (2 ms kernels), and a tenant with a
# 40 % share launching 1 ms kernels while holding 256 MiB.
live = dict(env, GS_FAKE_KERNEL_US="2000")
crit = tenants.live(root, ["--memory", "512Mi", "--critical", "--", WORKER, "direct", "requests", "3000", "4"], live)
hog = tenants.live(root, ["--memory", "1Gi", "--compute", "40", "--", "sh", "-c",
                          '"$0" direct hold 268435456 40 & "$0" direct launch 20000; wait', WORKER], live)
missing = os.path.join(root, "no-kubelet", "kubelet.sock")
mon = subprocess.Popen([GS, "monitor", "--listen", "127.0.0.1:0", "--interval", "1", "--state-root", root,
                        "--pod-resources-socket", missing], stderr=subprocess.PIPE, text=True)
line = mon.stderr.readline()
m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
ok(m is not None, "the monitor serves the state root", line)
url = "http://127.0.0.1:%s/" % (m.group(1) if m else "0")
time.sleep(6)  # a few history samples while the live tenants work

os.makedirs(LOGS, exist_ok=True)
wide = os.path.join(LOGS, "dashboard-wide.png")
narrow = os.path.join(LOGS, "dashboard-narrow.png")
d = browse(url, ["--dump-dom"])
dom = Dom()
dom.feed(d.stdout)
ok(d.returncode == 0 and dom.find(None, id="slices"), "chromium loaded the dashboard and ran its script",
   d.stderr[-500:])
with open(os.path.join(LOGS, "dashboard-dom.html"), "w") as f:
    f.write(d.stdout)

gpus = dom.find("gpu")
g = gpus[0] if gpus else {"text": ""}
node = (dom.find(None, id="node") or [{"text": ""}])[0]["text"]
ok(len(gpus) == 1 and "gpuslice simulated GPU" in g["text"] and "16.00 GiB" in g["text"] and
   node and node in g["text"] and re.search(r"allocated\s*[\d.]+ GiB to 4 slice", g["text"]) and
   re.search(r"free\s*[\d.]+ GiB", g["text"]),
   "a header for the GPU: its name, memory total, allocated (4 slices) and free, the node",
   g["text"][:400])
upd = (dom.find(None, id="updated") or [{"text": ""}])[0]["text"]
ok(re.search(r"\d\d\d\d-\d\d-\d\dT", upd), "the page says when it was last updated", upd)
why = (dom.find(None, id="pods-why") or [{"text": ""}])[0]["text"]
ok(missing in why and "not there" in why, "it says why Pod names are unknown (no PodResources socket there)", why)

cards = dom.find("slice")
states = sorted(c["attrs"].get("data-state") for c in cards)
ok(states == ["finished", "no-cuda", "running", "running"],
   "every slice is shown in its state: finished, never used CUDA, two running", states)
fin = [c for c in cards if c["attrs"].get("data-state") == "finished"]
ok(fin and "reached its memory cap" not in fin[0]["text"] and "1 in all" in fin[0]["text"],
   "the finished slice keeps its refusal count but no 'reached its cap' alert", fin[0]["text"][:300] if fin else cards)
nocuda = [c for c in cards if c["attrs"].get("data-state") == "no-cuda"]
ok(nocuda and "CPU fallback" in nocuda[0]["text"], "the slice that never used CUDA is flagged (CPU fallback?)",
   nocuda[0]["text"][:300] if nocuda else cards)
ids = [c["attrs"].get("data-slice") for c in cards]
ok(len(ids) == 4 and ids == sorted(ids), "four slice cards, in a stable order (GPU, Pod, then slice id)", ids)

charts = dom.find("chart")


def points(kind):
    return [int(c["attrs"].get("data-points", "0")) for c in charts if c["attrs"].get("data-kind") == kind]


ok(len(points("memory")) == 4 and min(points("memory")) >= 3,
   "a memory-against-cap chart per slice, each with the history's points", points("memory"))
ok(len(points("gpu")) == 4 and max(points("gpu")) >= 2,
   "a GPU-time-against-share chart per slice, with points", points("gpu"))
ok(len(points("latency")) >= 1 and max(points("latency")) >= 2,
   "the latency-critical tenant's request latency is charted", points("latency"))
lines = [e for e in dom.elems if e["tag"] == "polyline"]
ok(any("ref" in e["classes"] for e in lines) and any("val" in e["classes"] for e in lines),
   "charts draw the cap/share as a reference line beside the measured one", len(lines))
running = [c for c in cards if c["attrs"].get("data-state") == "running"]
ok(any(re.search(r"using [\d.]+ %", c["text"]) for c in running) and
   any(re.search(r"[\d.]+ ms mean", c["text"]) for c in running),
   "rates, not totals: GPU use now and the mean request latency", [c["text"][:200] for c in running])
ok("<script src" not in d.stdout and "<link" not in d.stdout and not re.search(r"https?://(?!127\.0\.0\.1)", d.stdout),
   "the page loads nothing from elsewhere", re.findall(r"https?://[^\s\"']+", d.stdout)[:5])

s1 = browse(url, ["--screenshot=" + wide])
s2 = browse(url, ["--screenshot=" + narrow], size="420,1400")


def png(path):
    try:
        with open(path, "rb") as f:
            head = f.read(24)
        return head[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(head[16:20], "big") > 0
    except OSError:
        return False


ok(png(wide) and png(narrow), "screenshots kept: " + wide + ", " + narrow, (s1.stderr[-300:], s2.stderr[-300:]))
n = browse(url, ["--dump-dom"], size="420,1400")
body = re.search(r"<body[^>]*>", n.stdout)
ok(body and 'data-fits="true"' in body.group(0),
   "on a 420 px window nothing is wider than the window", body.group(0) if body else n.stdout[:300])

mon.terminate()
mon.wait(timeout=10)
tenants.stop([crit, hog])
shutil.rmtree(root, ignore_errors=True)
shutil.rmtree(home, ignore_errors=True)
sys.exit(tap.done())
