"""The independent audit (src/node/audit.c) through `gpuslice monitor`: the driver's
per-process view (the simulated NVML, GS_FAKE_NVML_PROCS) against each slice's cap,
processes tied to slices by their limits mount or, outside containers, their initial
environment; a process over its slice's allowance is reported (and with --audit kill,
stopped); a GPU process of no slice is reported. TAP output."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

BUILD = os.path.abspath(os.environ.get("GS_BUILD_DIR", "build"))
GS = os.path.join(BUILD, "gpuslice")
GiB, MiB = 1 << 30, 1 << 20
t = Tap()


def make_slice(root, memory):
    p = subprocess.run([GS, "run", "--simulated", "--memory", memory, "--keep-state", "--state-root", root,
                        "--", "true"], capture_output=True, text=True)
    ids = sorted(d for d in os.listdir(root) if not d.startswith(("_", ".")))
    return p, ids


def monitor(root, procs, *extra):
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), GS_FAKE_NVML_PROCS=procs)
    return subprocess.run([GS, "monitor", "--json", "--state-root", root, "--pod-resources-socket", "",
                           *extra], capture_output=True, text=True, env=env, timeout=60)


def main():
    root = tempfile.mkdtemp(prefix="gs-audit-")
    kids = []
    made_run = False
    try:
        _, ids = make_slice(root, "1Gi")
        p, ids2 = make_slice(root, "2Gi")
        t.ok(p.returncode == 0 and len(ids2) == 2, "two slices kept by gpuslice run", p.stderr[-500:])
        one, two = ids2[0], ids2[1]
        lim_one = open(os.path.join(root, one, "limits")).read()
        # cap1: the 1 GiB slice, cap2: the 2 GiB one.
        cap1 = one if "memory = %d" % GiB in lim_one else two
        cap2 = two if cap1 == one else one
        # A process of the 1 GiB slice outside any container: tied by its environment.
        a = subprocess.Popen(["sleep", "60"], env=dict(os.environ, GPUSLICE_STATE_DIR=os.path.join(root, cap1)))
        kids.append(a)
        # A process of the 2 GiB slice as in a container: tied by its limits mount.
        b = None
        if os.geteuid() == 0 and shutil.which("unshare"):
            script = ("mount -t tmpfs gs-t /run/gpuslice && touch /run/gpuslice/limits && "
                      "mount --bind %s /run/gpuslice/limits && exec sleep 60"
                      % os.path.join(root, cap2, "limits"))
            # The mount point on the host: an empty folder, removed once the process is gone
            # (removing it earlier would detach the mount inside the namespace too).
            made_run = not os.path.exists("/run/gpuslice")
            os.makedirs("/run/gpuslice", exist_ok=True)
            b = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script])
            kids.append(b)
            time.sleep(0.5)
        # A GPU process of no slice.
        c = subprocess.Popen(["sleep", "60"], env={k: v for k, v in os.environ.items() if not k.startswith("GPUSLICE")})
        kids.append(c)
        procs = "0:%d:3Gi,0:%d:700Mi" % (a.pid, c.pid) + (",0:%d:2Gi" % b.pid if b else "")
        m = monitor(root, procs)
        data = json.loads(m.stdout) if m.returncode == 0 else {}
        au = data.get("audit", {})
        sl = {s["id"]: s for s in data.get("slices", [])}
        t.ok(au.get("state") == "on", "the audit reads the driver's per-process view", (m.stderr, au))
        s1 = sl.get(cap1, {}).get("audit", {})
        t.ok(s1.get("over_cap") is True and s1.get("gpu_memory_bytes") == 3 * GiB and s1.get("tied_by") == "environment"
             and s1.get("allowed_bytes") == GiB + s1.get("gpu_processes", 0) * 608 * MiB,
             "a process holding 3 GiB in a 1 GiB slice is over its cap and one context", s1)
        t.ok("AUDIT: slice %s holds 3 GiB" % cap1 in m.stderr and "interposer was bypassed" in m.stderr,
             "the monitor says so on its log", m.stderr[-800:])
        if b:
            s2 = sl.get(cap2, {}).get("audit", {})
            t.ok(s2.get("over_cap") is False and s2.get("gpu_memory_bytes") == 2 * GiB and s2.get("tied_by") == "mount",
                 "a containerised process is tied to its slice by its limits mount, within its allowance", s2)
        else:
            t.ok(True, "mount tie # skip needs root and unshare")
        un = au.get("unsliced_processes", [])
        t.ok([u["pid"] for u in un] == [c.pid] and un[0]["gpu_memory_bytes"] == 700 * MiB,
             "a GPU process of no slice is reported", un)
        off = monitor(root, procs, "--audit", "off")
        t.ok(off.returncode == 0 and "audit" not in json.loads(off.stdout), "--audit off leaves it out")
        none = subprocess.run([GS, "monitor", "--json", "--state-root", root, "--pod-resources-socket", ""],
                              capture_output=True, text=True, env=dict(os.environ, LD_LIBRARY_PATH="/nonexistent"))
        na = json.loads(none.stdout).get("audit", {}) if none.returncode == 0 else {}
        t.ok(na.get("state") == "unavailable" and "libnvidia-ml" in na.get("why", ""),
             "without NVML the audit says it is unavailable and why", na)
        # Metrics.
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), GS_FAKE_NVML_PROCS=procs)
        srv = subprocess.Popen([GS, "monitor", "--listen", "127.0.0.1:0", "--state-root", root,
                                "--pod-resources-socket", ""], env=env, stderr=subprocess.PIPE, text=True)
        line = srv.stderr.readline()
        port = int(line.rsplit(":", 1)[1]) if "http://" in line else 0
        body = ""
        try:
            for _ in range(3):  # three passes of the audit
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
                    body = r.read().decode()
        except OSError as e:
            body = repr(e)
        srv.send_signal(signal.SIGTERM)
        log = srv.stderr.read()
        srv.wait(timeout=10)
        t.ok(log.count("AUDIT: slice %s holds" % cap1) == 1 and log.count("belongs to no slice") == 1,
             "the log says each finding once, not at every pass", log[-1500:])
        t.ok("gpuslice_audit_up 1" in body and 'gpuslice_slice_over_cap{slice="%s"' % cap1 in body and
             "gpuslice_unsliced_gpu_processes 1" in body,
             "/metrics carries the audit: up, over-cap per slice, unsliced processes", body[-1500:])
        # The doctor on this (live) node reports the same.
        d = subprocess.run([GS, "doctor", "--skip-cluster", "--json", "--state-dir", root], env=env,
                           capture_output=True, text=True, timeout=60)
        rep = json.loads(d.stdout) if d.stdout.startswith("{") else {}
        ids = {f["id"]: f for f in rep.get("findings", [])}
        t.ok("tenant.audit-over-cap" in ids and ids["tenant.audit-over-cap"]["severity"] == "error" and
             cap1 in ids["tenant.audit-over-cap"]["title"] and "tenant.audit-unsliced" in ids,
             "the doctor names the slice over its cap (error) and the process of no slice",
             [(f["id"], f["severity"]) for f in rep.get("findings", [])] or d.stderr[-500:])
        # Kill mode stops the processes of the slice over its cap, and only those.
        k = monitor(root, procs, "--audit", "kill")
        time.sleep(0.2)
        t.ok(k.returncode == 0 and a.poll() is not None and c.poll() is None and (b is None or b.poll() is None),
             "--audit kill stops the over-cap slice's process and no other", k.stderr[-600:])
    finally:
        for k in kids:
            if k.poll() is None:
                k.kill()
                k.wait()
        shutil.rmtree(root, ignore_errors=True)
        if made_run:
            os.rmdir("/run/gpuslice")
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
