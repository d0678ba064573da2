"""A CUDA graph that allocates inside its capture, under PyTorch's cudaMallocAsync
backend (a memory-allocation node per allocation), to run under `gpuslice run`.

    PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync python3 torch_graph_mem.py MiB [keep|temp]

keep: the graph's output tensor of MiB outlives the capture; temp: the graph frees it
itself (only its sum is kept). Prints what the slice then shows free."""
import sys

import torch

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
mode = sys.argv[2] if len(sys.argv) > 2 else "keep"
print("backend", torch.cuda.memory.get_allocator_backend(), "mode", mode)
g = torch.cuda.CUDAGraph()
torch.cuda.synchronize()
try:
    with torch.cuda.graph(g):
        if mode == "temp":
            z = torch.ones(mib << 18, device="cuda").sum()
        else:
            y = torch.empty(mib << 18, device="cuda")
            y.fill_(2.0)
            z = y.sum()
    g.replay()
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    print(f"replayed: z = {float(z):.0f}; the slice shows {free >> 20} MiB free of {total >> 20}")
    try:
        x = torch.empty(768 << 18, device="cuda")
        print("then 768 MiB more: allocated")
    except torch.OutOfMemoryError:
        print("then 768 MiB more: torch.OutOfMemoryError")
except Exception as ex:
    print("error:", type(ex).__name__, str(ex).splitlines()[0])
