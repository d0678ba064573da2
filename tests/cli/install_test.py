#!/usr/bin/python3
"""`make install` into a temporary DESTDIR, with the default PREFIX and with
PREFIX=/usr: the tree it makes, and that what it installed runs from there
(the binary, its kubectl plugin name, `gpuslice run` finding the installed
libgpuslice.so and simulated GPU, the man pages through man -l); then
`make uninstall` leaves nothing. TAP output."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.path.abspath(os.environ.get("GS_BUILD_DIR", os.path.join(SRC, "build")))
tap = Tap()
ok = tap.ok
MAKE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}


def make(*args):
    # -o: what the build already made is not made again here (no -j, no WERROR change).
    keep = []
    for f in ("gpuslice", "libgpuslice.so", "sim/libcuda.so.1", "sim/libnvidia-ml.so.1"):
        keep += ["-o", os.path.join(BUILD, f)]
    return subprocess.run(["make", "-s", "-C", SRC, "BUILD=" + BUILD] + keep + list(args),
                          capture_output=True, text=True, timeout=300, env=MAKE_ENV)


def tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, f)
            out["/" + os.path.relpath(p, root)] = (os.readlink(p) if os.path.islink(p)
                                                   else stat.S_IMODE(os.stat(p).st_mode))
    return out


def expected(prefix):
    man = ["gpuslice.1", "gpuslice-run.1", "gpuslice-agent.1", "gpuslice-doctor.1", "gpuslice-monitor.1",
           "gpuslice-kubectl.1", "kubectl-gpuslice.1"]
    want = {prefix + "/bin/gpuslice": 0o755, prefix + "/bin/kubectl-gpuslice": "gpuslice",
            prefix + "/bin/kubectl_complete-gpuslice": "gpuslice",
            prefix + "/lib/gpuslice/libgpuslice.so": 0o755,
            prefix + "/lib/gpuslice/sim/libcuda.so.1": 0o755,
            prefix + "/lib/gpuslice/sim/libnvidia-ml.so.1": 0o755,
            prefix + "/share/bash-completion/completions/gpuslice": 0o644,
            prefix + "/share/bash-completion/completions/kubectl-gpuslice": "gpuslice",
            prefix + "/share/zsh/vendor-completions/_gpuslice": 0o644}
    want.update({prefix + "/share/man/man1/" + m: 0o644 for m in man})
    return want


for prefix, args in (("/usr/local", []), ("/usr", ["PREFIX=/usr"])):
    dest = tempfile.mkdtemp(prefix="gs-install-")
    p = make("install", "DESTDIR=" + dest, *args)
    ok(p.returncode == 0, "make install DESTDIR=... %s" % " ".join(args), p.stdout + p.stderr)
    got = tree(dest)
    want = expected(prefix)
    ok(got == want, "the installed tree under %s: binary, plugin links, library, simulated GPU, man "
       "pages, completions (%d paths)" % (prefix, len(want)),
       "\n".join("%s: got %s, want %s" % (k, got.get(k), want.get(k))
                 for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)))
    bin_ = dest + prefix + "/bin/"
    v = subprocess.run([bin_ + "gpuslice", "version"], capture_output=True, text=True)
    ok(v.returncode == 0 and v.stdout.startswith("gpuslice 0.1.0") and "build: full" in v.stdout,
       "the installed gpuslice runs", v.stdout + v.stderr)
    r = subprocess.run([bin_ + "kubectl-gpuslice", "request", "3Gi", "--unit", "256Mi"],
                       capture_output=True, text=True)
    ok(r.returncode == 0 and "gpuslice.io/gpu-memory: 12" in r.stdout,
       "the installed kubectl-gpuslice is the plugin", r.stdout + r.stderr)
    state = tempfile.mkdtemp(prefix="gs-install-state-")
    env = {k: v for k, v in os.environ.items() if k != "GPUSLICE_INTERPOSER"}
    r = subprocess.run([bin_ + "gpuslice", "run", "--simulated", "--memory", "1Gi", "--state-root", state,
                        "--", "sh", "-c", 'echo "preload=$LD_PRELOAD"'], capture_output=True, text=True,
                       env=env, timeout=60)
    pre = [ln[len("preload="):] for ln in r.stdout.splitlines() if ln.startswith("preload=")]
    ok(r.returncode == 0 and len(pre) == 1 and
       os.path.realpath(pre[0]) == os.path.realpath(dest + prefix + "/lib/gpuslice/libgpuslice.so") and
       "SIMULATED GPU" in r.stderr,
       "the installed gpuslice run finds the installed libgpuslice.so and simulated GPU", r.stdout + r.stderr)
    shutil.rmtree(state, ignore_errors=True)
    if shutil.which("man"):
        m = subprocess.run(["man", "-l", dest + prefix + "/share/man/man1/kubectl-gpuslice.1"],
                           capture_output=True, text=True, cwd=dest + prefix + "/share/man",
                           env=dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8"))
        ok(m.returncode == 0 and "kubectl gpuslice request" in m.stdout,
           "man kubectl-gpuslice shows the plugin's page (a .so link)", m.stdout[:300] + m.stderr)
    u = make("uninstall", "DESTDIR=" + dest, *args)
    ok(u.returncode == 0 and tree(dest) == {}, "make uninstall removes every file it installed",
       u.stderr + str(tree(dest)))
    shutil.rmtree(dest, ignore_errors=True)
sys.exit(tap.done())
