"""A tenant that tries to take more GPU memory than its slice allows (bench/node.py runs
it), to show what the node's independent audit sees.

  --mode ledger   with the interposer loaded, it zeroes its own ledger slot's byte count
                  after each allocation (the ledger is the one file a tenant may write);
  --mode plain    it allocates as any program would (bench/node.py starts it without
                  /etc/ld.so.preload: the interposer is not in it, as for a static binary).

Allocates --mib MiB in 256 MiB tensors (PyTorch), prints one JSON line, then holds the
memory until stdin closes."""
import argparse
import json
import mmap
import os
import struct
import sys

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--mode", choices=("ledger", "plain"), default="plain")
ap.add_argument("--mib", type=int, default=8192, help="MiB to try to hold (default 8192)")
args = ap.parse_args()
import torch  # noqa: E402  (after the options, so --help needs no torch)

LEDGER = "/run/gpuslice/ledger"
SLOT0, SLOT, USED = 128, 64, 16  # the ledger ABI (src/contract/ledger.h)
out = {"pid": os.getpid(), "mode": args.mode, "asked_mib": args.mib}
torch.cuda.init()
led = None
if args.mode == "ledger":
    try:
        f = open(LEDGER, "r+b")
        led = mmap.mmap(f.fileno(), 0)
    except OSError as e:
        out["ledger_error"] = str(e)


def forget_my_bytes():
    """Zero the byte count of every slot that names this process."""
    n = 0
    for off in range(SLOT0, len(led) - SLOT + 1, SLOT):
        if struct.unpack_from("<i", led, off)[0] == os.getpid():
            struct.pack_into("<Q", led, off + USED, 0)
            n += 1
    return n


held, err = [], None
for _ in range(args.mib // 256):
    try:
        held.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
    except Exception as e:  # torch.OutOfMemoryError when the cap holds
        err = type(e).__name__
        break
    if led is not None:
        out["slots_zeroed"] = forget_my_bytes()
out["held_mib"] = 256 * len(held)
out["stopped_by"] = err
print(json.dumps(out), flush=True)
sys.stdin.read()
