"""Tenants for the monitor's tests: `gpuslice run --simulated` commands, kept
(--keep-state) in one state root; a live one runs in its own process group
(the run, its shell, its workers) so that stop() ends all of it by its id."""
import os
import subprocess

BUILD = os.path.abspath(os.environ.get("GS_BUILD_DIR", "build"))
GS = os.path.join(BUILD, "gpuslice")


def argv(root, args):
    return [GS, "run", "--simulated", "--keep-state", "--state-root", root] + list(args)


def live(root, args, env=None):
    return subprocess.Popen(argv(root, args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)


def stop(procs):
    for p in procs:
        try:
            os.killpg(p.pid, 15)
        except ProcessLookupError:
            pass
        p.wait(timeout=30)
