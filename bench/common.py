"""Helpers the benchmarks share: one private NVIDIA MPS control daemon, the GPU's clock and
power sampled from nvidia-smi, a process's device memory from nvidia-smi, percentiles,
memory quantities, a model captured as a CUDA graph. Not a program of its own."""
import os
import re
import subprocess
import tempfile
import threading
import time


# A solo loop keeps the GPU busy nearly all the time it counts (0.94-0.98 on the H200);
# one that did not was still starting when it began to count (a cold GPU, a lead too
# short for its start-up: 0.69 seen on 2026-12-01).
SOLO_BUSY_MIN = 0.9


def solo_reference(solos):
    """(reference rate, index of a dropped solo or None) from two solo runs, each (rate,
    GPU-busy fraction or None): their mean, unless one kept the GPU busy less than
    SOLO_BUSY_MIN of its time and the other did not; then the other's rate."""
    low = [b is not None and b < SOLO_BUSY_MIN for _, b in solos]
    if low[0] != low[1]:
        keep = 1 if low[0] else 0
        return solos[keep][0], 1 - keep
    return (solos[0][0] + solos[1][0]) / 2, None


def start_tenant(cmd, env):
    """Starts a tenant process that runs beside others: its stdout piped, its stderr to a
    temporary file. The caller reads the tenants one after another (finish_tenant), and a
    stderr pipe left unread meanwhile would fill (64 KiB) under a talkative log level and
    stall the tenant in its own write."""
    err = tempfile.TemporaryFile("w+")
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True), err


def finish_tenant(tenant, timeout):
    """Waits for a start_tenant process: its stdout and its stderr, as text."""
    p, err = tenant
    out, _ = p.communicate(timeout=timeout)
    err.seek(0)
    text = err.read()
    err.close()
    return out, text


def mps_env():
    """Private pipe and log directories for one MPS control daemon."""
    d = tempfile.mkdtemp(prefix="gs-mps-")
    env = {"CUDA_MPS_PIPE_DIRECTORY": d + "/pipe", "CUDA_MPS_LOG_DIRECTORY": d + "/log"}
    os.makedirs(env["CUDA_MPS_PIPE_DIRECTORY"])
    os.makedirs(env["CUDA_MPS_LOG_DIRECTORY"])
    return env


def mps_control(env, what):
    """Starts the daemon of env ("start") or always asks it to quit ("quit")."""
    e = dict(os.environ, **env)
    if what == "start":
        subprocess.run(["nvidia-cuda-mps-control", "-d"], env=e, check=True)
    else:
        subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True, env=e)


def nvml_used_by_pid():
    """Device memory per process id, in bytes, as nvidia-smi (NVML) reports it."""
    q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True).stdout
    used = {}
    for line in q.strip().splitlines():
        p, m = [x.strip() for x in line.split(",")]
        used[int(p)] = int(m) * (1 << 20)
    return used


def parse_bytes(q):
    """A memory quantity as gpuslice run --memory takes it (512Mi, 4Gi, 1.5GiB, 4G, 1000) in bytes."""
    m = re.fullmatch(r"([0-9.]+)\s*([KMGT]?)(i?)B?", q.strip())
    if not m:
        raise ValueError(f"not a quantity: {q!r}")
    power = " KMGT".index(m.group(2) or " ")
    return int(float(m.group(1)) * (1024 if m.group(3) else 1000) ** power)


def pct(v, q):
    """The q-th percentile of v (an element of it; 0.0 for none)."""
    v = sorted(v)
    return v[min(len(v) - 1, (len(v) * q) // 100)] if v else 0.0


class Sampler:
    """nvidia-smi's SM clock (MHz) and power (W) every 50 ms, stamped with time.time(),
    read on a thread until stop()."""

    def __init__(self):
        self.rows, self.error = [], None
        try:
            self.p = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw",
                                       "--format=csv,noheader,nounits", "-lms", "50"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError as ex:
            self.p, self.error = None, f"nvidia-smi: {ex}"
            return
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        for line in self.p.stdout:
            try:
                mhz, watts = (float(x) for x in line.split(","))
            except ValueError:
                continue  # "[N/A]" or a partial line
            self.rows.append((time.time(), mhz, watts))

    def medians(self, phases, skip=0.2):
        """Medians per phase tag over the samples so far inside its phases (dicts with t0,
        t1, tag), leaving out each phase's first `skip` seconds (the load changing)."""
        if self.p is None:
            return {"error": self.error}
        rows, per = list(self.rows), {}
        for ph in phases:
            s = [r for r in rows if ph["t0"] + skip <= r[0] < ph["t1"]]
            per.setdefault(ph["tag"], []).extend(s)
        return {tag: {"n": len(s), "sm_mhz": pct([x[1] for x in s], 50), "power_w": pct([x[2] for x in s], 50)}
                for tag, s in per.items()}

    def stop(self, phases):
        """Stops sampling; the medians of the phases (above)."""
        if self.p is not None:
            self.p.terminate()
            self.p.wait(timeout=10)
            self.t.join(timeout=10)
        return self.medians(phases)
