"""Helpers the H200 compute benchmarks share: one private NVIDIA MPS control daemon."""
import os
import subprocess
import tempfile


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
