"""The arm64 build (Jetson's images): every binary and library `make` builds
(`make binaries`, ALL_TARGETS: gpuslice, libgpuslice.so, the simulated GPU, the
demo), compiled with CROSS=aarch64-linux-gnu by Debian's cross toolchain against the arm64 -dev packages (multiarch), the
way deploy/Containerfile's build stage does for --platform linux/arm64, into
its own folder ($GS_BUILD_DIR-arm64). Each artefact and object must be a
64-bit little-endian AArch64 ELF, and scripts/runtime-packages.sh must name
the Debian packages of what they link, as the image's runtime stage installs.
TAP; 77 without aarch64-linux-gnu-gcc (scripts/install-deps.sh installs it
with the arm64 -dev packages). Incremental after the first run (~1 min on 2 cores)."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

SRC = os.environ.get("GS_SRC_DIR", ".")
BUILD = os.path.abspath(os.environ.get("GS_BUILD_DIR", "build"))
CROSS = "aarch64-linux-gnu"
EM_AARCH64 = 183

cc = CROSS + "-gcc"
if os.environ.get("SAN"):  # the sanitizers change nothing of the cross build: once is enough
    print("1..0 # SKIP the arm64 build runs in the plain test pass")
    sys.exit(77)
if not shutil.which(cc):
    print("1..0 # SKIP %s not installed (crossbuild-essential-arm64: scripts/install-deps.sh)" % cc)
    sys.exit(77)
tap = Tap()
out = BUILD.rstrip("/") + "-arm64"
make = ["make", "-C", SRC, "WERROR=1", "CROSS=" + CROSS, "BUILD=" + out]

# deploy/Containerfile's build stage, for TARGETARCH=arm64, picks this same triplet.
with open(os.path.join(SRC, "deploy", "Containerfile")) as f:
    m = re.search(r"cross=(\$\(dpkg-architecture [^)]*\))", f.read())
picked = subprocess.run(["sh", "-c", "target=arm64; echo %s" % m.group(1)], capture_output=True,
                        text=True).stdout.strip() if m else None
tap.ok(picked == CROSS, "deploy/Containerfile's build stage cross-compiles for TARGETARCH=arm64 with %s"
       % CROSS, (m and m.group(1), picked))

db = subprocess.run(make + ["-pq", "all"], capture_output=True, text=True).stdout
m = re.search(r"^ALL_TARGETS :?= (.*)$", db, re.M)
targets = m.group(1).split() if m else []
tap.ok(targets and all(t.startswith(out + "/") for t in targets),
       "the Makefile's artefacts, in %s: %s" % (out, " ".join(os.path.relpath(t, out) for t in targets)), db[-500:])

p = subprocess.run(make + ["-j2", "binaries"], capture_output=True, text=True, timeout=1200)
compiled = re.search(r"^%s .* -c " % re.escape(cc), p.stdout, re.M) or "Nothing to be done" in p.stdout
tap.ok(p.returncode == 0 and compiled,
       "make CROSS=%s BUILD=%s binaries builds them with %s and -Werror" % (CROSS, os.path.basename(out), cc),
       (p.stdout + p.stderr)[-3000:])


def elf(path):
    """(64-bit, little-endian, e_machine) of an ELF file, None if it is not one."""
    with open(path, "rb") as f:
        h = f.read(20)
    if len(h) < 20 or h[:4] != b"\x7fELF":
        return None
    return h[4] == 2, h[5] == 1, int.from_bytes(h[18:20], "little")


arts = {os.path.relpath(t, out): elf(t) if os.path.exists(t) else None for t in targets}
tap.ok(arts and all(v == (True, True, EM_AARCH64) for v in arts.values()),
       "every artefact is a 64-bit little-endian AArch64 ELF", arts)
objs = [os.path.join(d, n) for d, _, ns in os.walk(out) for n in ns if n.endswith(".o")]
wrong = [o for o in objs if elf(o) != (True, True, EM_AARCH64)]
tap.ok(objs and not wrong, "and so is every one of its %d objects (nothing of the host's mixed in)" % len(objs),
       wrong[:10])

libs = [t for t in targets if os.path.exists(t)]
r = subprocess.run([os.path.join(SRC, "scripts", "runtime-packages.sh")] + libs, capture_output=True, text=True)
pkgs = r.stdout.split()
tap.ok(r.returncode == 0 and not r.stderr and {"libc6", "libgrpc29", "libprotobuf-c1", "libmicrohttpd12",
                                               "libcjson1", "libyaml-0-2"} <= set(pkgs),
       "runtime-packages.sh names the arm64 runtime packages from their NEEDED entries: %s" % " ".join(pkgs),
       r.stdout + r.stderr)
sys.exit(tap.done())
