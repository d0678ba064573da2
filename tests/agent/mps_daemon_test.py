#!/usr/bin/python3
"""The agent owns NVIDIA's MPS control daemon (compute_sharing = mps,
mps_daemon = auto): the real agent against tests/agent/fake_mps_control.py in
the place of nvidia-cuda-mps-control (first on PATH, or given as mps_control),
with `gpuslice doctor` reading what the agent wrote in its node file.

Covers: started when none answers (its folders created, its environment),
started again after SIGKILL, a start that fails retried with back-off until it
works, the doctor's finding while it is down and once it runs, stopped on
SIGTERM; a daemon someone else started left alone, then and on SIGTERM;
mps_daemon = external starts nothing; a missing program or an unusable folder
stops the agent with an error naming the setting and the fix."""
import json
import os
import signal
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakekubelet as fk  # noqa: E402

tap = fk.Tap()
HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_mps_control.py")
GS = os.path.join(fk.BUILD, "gpuslice")


def read_kv(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                if "=" in line and not line.lstrip().startswith("#"):
                    k, v = line.split("=", 1)
                    out[k.strip()] = v.strip()
    except FileNotFoundError:
        pass
    return out


def answers(pipe):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(os.path.join(pipe, "control"))
        return True
    except OSError:
        return False
    finally:
        s.close()


def alive(pid):
    """pid runs and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def fake_pid(pipe):
    try:
        with open(os.path.join(pipe, "nvidia-cuda-mps-control.pid")) as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def control_log(log):
    try:
        with open(os.path.join(log, "control.log")) as f:
            return f.read()
    except OSError:
        return ""


def doctor(state):
    p = subprocess.run([GS, "doctor", "--skip-cluster", "--json", "--state-dir", state],
                       capture_output=True, text=True, timeout=60)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"findings": [], "raw": p.stdout[-2000:] + p.stderr[-2000:]}


def finding(rep, fid):
    f = [x for x in rep.get("findings", []) if x.get("id") == fid]
    return f[0] if f else None


class Node:
    """A kubelet folder, a state root, the MPS folders, PATH with the fake
    first (as nvidia-cuda-mps-control), and the agent's log."""

    def __init__(self, tmp, name):
        self.dir = os.path.join(tmp, name)
        self.bin = os.path.join(self.dir, "bin")
        self.kdir = os.path.join(self.dir, "dp")
        self.state = os.path.join(self.dir, "state")
        self.pipe = os.path.join(self.dir, "run", "mps")  # not there yet: the agent makes it
        self.log = os.path.join(self.dir, "log", "mps")
        os.makedirs(self.bin)
        os.makedirs(self.kdir)
        os.symlink(FAKE, os.path.join(self.bin, "nvidia-cuda-mps-control"))
        self.env = {"PATH": self.bin + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                    "FAKE_MPS_FAIL_IF": os.path.join(self.dir, "fail-start")}
        self.name = name

    def agent(self, *extra, env=None):
        return fk.Agent(self.dir, "agent", ["--backend", "simulated", "--kubelet-dir", self.kdir,
                                            "--state-root", self.state, "--reclaim-interval", "0",
                                            "--compute-sharing", "mps", "--mps-pipe-dir", self.pipe,
                                            "--mps-log-dir", self.log, "--mps-check-interval", "1"]
                        + list(extra), env=dict(self.env, **(env or {}))).start()

    def node(self):
        return read_kv(os.path.join(self.state, "_agent", "node"))

    def fake(self, *args, stdin=None):
        env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=self.pipe, CUDA_MPS_LOG_DIRECTORY=self.log)
        return subprocess.run([FAKE] + list(args), input=stdin, capture_output=True, text=True,
                              env=env, timeout=30)


def owned(tmp):
    """auto, none running: the agent starts it, restarts it, stops it."""
    n = Node(tmp, "owned")
    agent = n.agent()
    try:
        nf = fk.wait_for(lambda: (lambda d: d if d.get("mps_daemon_state") == "running" else None)(n.node()))
        pid = fake_pid(n.pipe)
        tap.ok(nf and nf.get("mps_daemon") == "auto" and nf.get("mps_daemon_started") == "true" and
               nf.get("compute_sharing") == "mps" and nf.get("mps_pipe_dir") == n.pipe and
               pid > 0 and nf.get("mps_daemon_pid") == str(pid) and answers(n.pipe),
               "auto: the agent starts the MPS control daemon when none answers, and its node file says so",
               (nf, pid, agent.tail()))
        modes = [stat.S_IMODE(os.stat(d).st_mode) if os.path.isdir(d) else None for d in (n.pipe, n.log)]
        tap.ok(modes == [0o755, 0o755], "the daemon's pipe and log folders are created, mode 0755", modes)
        tap.ok("Starting control daemon (pid %d)" % pid in control_log(n.log),
               "the daemon runs with CUDA_MPS_LOG_DIRECTORY = mps_log_dir (its control.log is there)",
               control_log(n.log))
        rep = doctor(n.state)
        f = finding(rep, "tenant.mps-daemon")
        tap.ok(f and f["severity"] == "ok" and "started by the agent" in " ".join(f.get("evidence", [])),
               "doctor: the MPS control daemon the agent runs answers (tenant.mps-daemon)",
               json.dumps(f or rep)[-1500:])

        os.kill(pid, signal.SIGKILL)
        nf = fk.wait_for(lambda: (lambda d: d if d.get("mps_daemon_state") == "running" and
                                  d.get("mps_daemon_pid") not in (str(pid), "0") else None)(n.node()))
        pid2 = fake_pid(n.pipe)
        tap.ok(nf and nf.get("mps_daemon_restarts") == "1" and nf.get("mps_daemon_pid") == str(pid2) and
               pid2 != pid and alive(pid2) and answers(n.pipe),
               "a daemon killed with SIGKILL is started again", (nf, pid, pid2, agent.tail()))
        tail = agent.tail(60)
        tap.ok("stopped answering" in tail and "started the MPS control daemon again (pid %d, restart 1)" % pid2
               in tail, "the agent logs the death and the restart", tail)

        # A daemon that cannot start: down, the doctor says so, retried with back-off.
        open(n.env["FAKE_MPS_FAIL_IF"], "w").close()
        os.kill(pid2, signal.SIGKILL)
        nf = fk.wait_for(lambda: (lambda d: d if d.get("mps_daemon_state") == "down" and
                                  d.get("mps_daemon_error") else None)(n.node()))
        tap.ok(nf and "exit status 1" in nf.get("mps_daemon_error", "") and nf.get("mps_daemon_pid") == "0",
               "a start that fails: the node file says down, and why", (nf, agent.tail()))
        rep = doctor(n.state)
        f = finding(rep, "tenant.mps-daemon-down")
        tap.ok(f and f["severity"] == "error" and "mps_control" in f.get("fix", "") and
               "mps_daemon = external" in f.get("fix", "") and
               "exit status 1" in " ".join(f.get("evidence", [])),
               "doctor: the agent's MPS control daemon is down (tenant.mps-daemon-down), with the last error "
               "and the fix", json.dumps(f or rep)[-1500:])
        tail = agent.tail(60)
        tap.ok("cannot start the MPS control daemon" in tail and "trying again in" in tail and
               "refusing to start" in tail,
               "the agent logs the failed start, the program's own message and when it tries again", tail)
        os.unlink(n.env["FAKE_MPS_FAIL_IF"])
        nf = fk.wait_for(lambda: (lambda d: d if d.get("mps_daemon_state") == "running" else None)(n.node()),
                         timeout=30)
        tap.ok(nf and nf.get("mps_daemon_error") == "" and answers(n.pipe) and nf.get("mps_daemon_restarts") == "2",
               "once it can start, the back-off retry starts it", (nf, agent.tail()))
        pid3 = fake_pid(n.pipe)
    finally:
        rc = agent.stop()
    tap.ok(rc == 0, "the agent stops cleanly", agent.tail())
    tap.ok(fk.wait_for(lambda: not alive(pid3) and not answers(n.pipe)) and "CMD quit" in control_log(n.log),
           "SIGTERM: the agent asks the daemon it started to quit, and it is gone", control_log(n.log))
    tap.ok("stopped the MPS control daemon the agent started (pid %d)" % pid3 in agent.tail(), "... and logs it",
           agent.tail())


def external_left_alone(tmp):
    """auto, a daemon already answers: the agent uses it, never stops it."""
    n = Node(tmp, "theirs")
    os.makedirs(n.pipe)
    os.makedirs(n.log)
    p = n.fake("-d")
    theirs = fake_pid(n.pipe)
    tap.ok(p.returncode == 0 and theirs > 0 and answers(n.pipe), "a daemon started before the agent runs",
           p.stderr)
    agent = n.agent()
    try:
        nf = fk.wait_for(lambda: (lambda d: d if d.get("mps_daemon_state") else None)(n.node()))
        tap.ok(nf and nf.get("mps_daemon_state") == "running" and nf.get("mps_daemon_started") == "false" and
               nf.get("mps_daemon_pid") == str(theirs),
               "auto with a daemon already answering: the agent starts none, and says it is not its own",
               (nf, agent.tail()))
        tap.ok("which was running already" in agent.tail(), "the agent logs that it leaves it to its owner",
               agent.tail())
    finally:
        rc = agent.stop()
    tap.ok(rc == 0 and alive(theirs) and answers(n.pipe) and "CMD quit" not in control_log(n.log),
           "SIGTERM: a daemon the agent did not start keeps running", (rc, control_log(n.log), agent.tail()))
    tap.ok("leaving the MPS control daemon" in agent.tail(), "... and the agent says so", agent.tail())
    q = n.fake(stdin="quit\n")
    tap.ok(q.returncode == 0 and fk.wait_for(lambda: not alive(theirs)), "the fake's client stops it", q.stderr)


def external_mode(tmp):
    """mps_daemon = external: checked, warned about, never started."""
    n = Node(tmp, "external")
    agent = n.agent("--mps-daemon", "external")
    try:
        nf = fk.wait_for(lambda: (lambda d: d if d.get("mps_daemon_state") else None)(n.node()))
        tap.ok(nf and nf.get("mps_daemon") == "external" and nf.get("mps_daemon_state") == "down" and
               "no MPS control daemon at " + n.pipe + "/control" in agent.tail(),
               "mps_daemon = external, none running: the agent warns, and its node file says down", (nf, agent.tail()))
        # The folder appears with a daemon in it: the next check sees it.
        os.makedirs(n.pipe)
        os.makedirs(n.log)
        n.fake("-d")
        pid = fake_pid(n.pipe)
        nf = fk.wait_for(lambda: (lambda d: d if d.get("mps_daemon_state") == "running" else None)(n.node()))
        tap.ok(nf and nf.get("mps_daemon_pid") == str(pid) and nf.get("mps_daemon_started") == "false",
               "external: a daemon that comes up later is seen at the next check", (nf, agent.tail()))
    finally:
        rc = agent.stop()
    tap.ok(rc == 0 and alive(pid), "external: SIGTERM leaves it running", agent.tail())
    n.fake(stdin="quit\n")
    fk.wait_for(lambda: not alive(pid))


def bad_settings(tmp):
    """A program the agent cannot find, a folder it cannot make: the agent
    does not start, and says which setting and what to do."""
    n = Node(tmp, "bad")
    empty = os.path.join(n.dir, "empty-bin")
    os.makedirs(empty)
    cases = [
        ("not in PATH", (), {"PATH": empty},
         ("nvidia-cuda-mps-control is not in PATH (" + empty, "set mps_control", "mps_daemon = external")),
        ("mps_control a missing file", ("--mps-control", "/nonexistent/nvidia-cuda-mps-control"), {},
         ("mps_control = /nonexistent/nvidia-cuda-mps-control", "not an executable file", "mps_daemon = external")),
        ("mps_control a relative path", ("--mps-control", "bin/nvidia-cuda-mps-control"), {},
         ("mps_control = bin/nvidia-cuda-mps-control is a relative path",)),
    ]
    blocker = os.path.join(n.dir, "a-file")
    open(blocker, "w").close()
    cases.append(("mps_pipe_dir under a file", ("--mps-pipe-dir", os.path.join(blocker, "mps")), {},
                  ("cannot create", "(mps_pipe_dir = " + os.path.join(blocker, "mps"))))
    for what, args, env, want in cases:
        a = n.agent(*args, env=env)
        try:
            rc = a.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        a.stop()
        tail = a.tail(5)
        tap.ok(rc == 1 and all(w in tail for w in want),
               "%s: the agent exits 1 with an error naming the setting and the fix" % what, (rc, tail))
    tap.ok(not os.path.exists(n.pipe), "no daemon was started", os.listdir(n.dir))


def main():
    tmp = tempfile.mkdtemp(prefix="gsm", dir="/tmp")  # short: unix socket paths
    try:
        owned(tmp)
        external_left_alone(tmp)
        external_mode(tmp)
        bad_settings(tmp)
    finally:
        for d in os.listdir(tmp):  # a daemon a failed check left behind
            pipe = os.path.join(tmp, d, "run", "mps")
            pid = fake_pid(pipe)
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
