"""Samples GPU 0's SM clock and power draw through NVML every few milliseconds until
killed, one CSV line per sample (wall time, MHz, W). nvidia-smi's -lms loop is too coarse
to see what the clock does inside a 200 ms compute window.

  python3 bench/clock_trace.py OUT.csv [--every-ms 5]
"""
import ctypes
import signal
import sys
import time

every = float(sys.argv[sys.argv.index("--every-ms") + 1]) / 1000 if "--every-ms" in sys.argv else 0.005
try:
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
except OSError:
    nvml = ctypes.CDLL("/usr/local/nvidia/lib64/libnvidia-ml.so.1")
if nvml.nvmlInit_v2() != 0:
    sys.exit("clock_trace: nvmlInit failed")
dev = ctypes.c_void_p()
if nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) != 0:
    sys.exit("clock_trace: no GPU 0")
NVML_CLOCK_SM = 1
mhz, mw = ctypes.c_uint(), ctypes.c_uint()
stop = False


def done(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, done)
signal.signal(signal.SIGINT, done)
with open(sys.argv[1], "w") as f:
    f.write("t,sm_mhz,power_w\n")
    while not stop:
        nvml.nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, ctypes.byref(mhz))
        nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(mw))
        f.write(f"{time.time():.4f},{mhz.value},{mw.value / 1000:.1f}\n")
        time.sleep(every)
nvml.nvmlShutdown()
