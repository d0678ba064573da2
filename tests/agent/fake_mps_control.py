#!/usr/bin/python3
"""A stand-in for NVIDIA's nvidia-cuda-mps-control, for machines without the
driver (CI). Only the part the agent uses:

  fake_mps_control.py -d   start the control daemon: it forks away, takes the
                           lock in $CUDA_MPS_PIPE_DIRECTORY (one daemon per
                           folder, as NVIDIA's), listens on its `control` socket
                           there (SOCK_SEQPACKET, as NVIDIA's), writes its pid to
                           nvidia-cuda-mps-control.pid beside it and control.log
                           in $CUDA_MPS_LOG_DIRECTORY, and the launcher exits 0
                           once the socket is up.
  fake_mps_control.py      the client: sends each line of stdin to the daemon
                           and prints its answers; exit 1 when none answers.

Commands: get_server_list, get_default_active_thread_percentage,
set_default_active_thread_percentage N, quit (answers, removes its pid file,
exits). Both folders must exist (the agent creates them). A file named by
$FAKE_MPS_FAIL_IF, when it exists, makes `-d` fail (a daemon that cannot
start). Killed (SIGKILL), it leaves its socket and pid file behind, and after
quit its socket, as NVIDIA's does (seen with CUDA 13's on the H200)."""
import fcntl
import os
import socket
import sys
import time

PIPE = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
LOG = os.environ.get("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps")
CONTROL = os.path.join(PIPE, "control")
PIDFILE = os.path.join(PIPE, "nvidia-cuda-mps-control.pid")


def log(line):
    with open(os.path.join(LOG, "control.log"), "a") as f:
        f.write("[%s] %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), line))


def ask(line):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(CONTROL)
    s.sendall(line.encode() + b"\n")
    out = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        out += b
    s.close()
    return out.decode()


def client():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            sys.stdout.write(ask(line))
        except OSError:
            sys.stderr.write("Cannot find MPS control daemon process\n")
            return 1
    return 0


def serve(srv):
    threads = "100.0"
    while True:
        conn, _ = srv.accept()
        conn.settimeout(2)
        data = b""
        try:
            while not data.endswith(b"\n"):
                b = conn.recv(4096)
                if not b:
                    break
                data += b
        except OSError:
            pass
        cmd = data.decode(errors="replace").strip()
        if not cmd:  # a probe: connected and closed
            conn.close()
            continue
        log("CMD %s" % cmd)
        words = cmd.split()
        if words[0] == "get_server_list":
            answer = ""
        elif words[0] == "get_default_active_thread_percentage":
            answer = threads
        elif words[0] == "set_default_active_thread_percentage" and len(words) == 2:
            threads = "%.1f" % float(words[1])
            answer = threads
        elif words[0] == "quit":
            conn.sendall(b"\n")
            conn.close()
            os.unlink(PIDFILE)  # the socket file stays, as NVIDIA's does
            log("quit: exiting")
            return
        else:
            answer = "Unknown command '%s'" % cmd
        try:
            conn.sendall(answer.encode() + b"\n")
        except OSError:
            pass
        conn.close()


def daemon():
    fail = os.environ.get("FAKE_MPS_FAIL_IF")
    if fail and os.path.exists(fail):
        sys.stderr.write("fake nvidia-cuda-mps-control: refusing to start (%s exists)\n" % fail)
        return 1
    for d, what in ((PIPE, "CUDA_MPS_PIPE_DIRECTORY"), (LOG, "CUDA_MPS_LOG_DIRECTORY")):
        if not os.path.isdir(d):
            sys.stderr.write("fake nvidia-cuda-mps-control: %s %s is not a folder\n" % (what, d))
            return 1
    lock = open(os.path.join(PIPE, "control_lock"), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.stderr.write("An instance of this daemon is already running\n")
        return 1
    r, w = os.pipe()
    if os.fork():
        os.close(w)
        ok = os.read(r, 1) == b"1"
        return 0 if ok else 1
    os.close(r)
    os.setsid()
    if os.fork():
        os._exit(0)
    try:
        if os.path.exists(CONTROL):
            os.unlink(CONTROL)  # a dead daemon's: the lock says none runs
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        srv.bind(CONTROL)
        srv.listen(16)
        with open(PIDFILE, "w") as f:
            f.write("%d\n" % os.getpid())
        log("Starting control daemon (pid %d)" % os.getpid())
    except OSError as e:
        sys.stderr.write("fake nvidia-cuda-mps-control: %s\n" % e)
        os.write(w, b"0")
        os._exit(1)
    os.write(w, b"1")
    os.close(w)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    serve(srv)
    os._exit(0)


if __name__ == "__main__":
    if sys.argv[1:] == ["-d"]:
        sys.exit(daemon())
    if sys.argv[1:]:
        sys.stderr.write("fake nvidia-cuda-mps-control: only -d or no argument\n")
        sys.exit(2)
    sys.exit(client())
