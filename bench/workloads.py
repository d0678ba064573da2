"""The models and jobs bench/compute_tenant.py runs, besides its ResNet-50 and GEMM loop:
workloads of the kinds a user brings to a shared GPU, built from PyTorch alone (random
weights, no downloads), so the latency class is measured on more than one rhythm.

Critical models (one request = what `request()` does; the caller synchronises after it):
  resnet50  torchvision ResNet-50, fp16: one forward of a batch of 224x224 images
  bert      a BERT-base-sized encoder (12 layers, width 768, 12 heads, 3072 feed-forward),
            fp16: one forward of a batch of --seq tokens
  decode    a GPT-2-small-sized decoder (12 layers, width 768, 12 heads, a 32,000-word
            head) generating --tokens tokens one at a time from a fixed-size key/value
            cache; the host waits for every token, as a sampler does, so a request is
            --tokens short bursts of GPU work with the host's turnaround between them
With graph=True each is replayed from CUDA graphs: the whole forward for resnet50 and bert,
one token's step for decode (as serving stacks capture a decode step).

Best-effort jobs (one step = what `step()` does, synchronised; `unit` names what a step
counts):
  gemm   --group bf16 matmuls of --size, then a synchronisation (the issue's hog)
  train  one training step of torchvision ResNet-50 at batch --train-batch, bf16 autocast,
         channels-last, SGD with momentum, then loss.item() as a training loop logs it:
         cuDNN's convolution kernels of many lengths, forward and backward, and the
         optimiser's multi-tensor kernels
"""


def capture_graph(torch, fn, warm=3):
    """fn() captured as one CUDA graph, after `warm` calls on a side stream as capture
    requires; the caller replays it."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warm):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


class Decoder:
    """A decoder-only transformer's token step over a static key/value cache: every shape
    fixed and the position a device tensor, so one step can be captured and replayed."""

    def __init__(self, torch, batch=1, layers=12, width=768, heads=12, ctx=512, vocab=32000,
                 device="cuda", dtype=None):
        dtype = dtype or torch.half
        self.F = torch.nn.functional
        self.heads, self.hd, self.ctx, self.width = heads, width // heads, ctx, width
        g = torch.Generator(device="cpu").manual_seed(7)

        def w(*shape):
            return (torch.randn(*shape, generator=g) * 0.02).to(device=device, dtype=dtype)

        self.layers = [{"qkv": w(width, 3 * width), "o": w(width, width), "fc1": w(width, 4 * width),
                        "fc2": w(4 * width, width), "ln1": torch.ones(width, device=device, dtype=dtype),
                        "ln2": torch.ones(width, device=device, dtype=dtype)} for _ in range(layers)]
        self.emb = w(vocab, width)
        self.k = torch.zeros(layers, batch, heads, ctx, self.hd, device=device, dtype=dtype)
        self.v = torch.zeros_like(self.k)
        self.x = w(batch, 1, width)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self.slots = torch.arange(ctx, device=device)
        self.token = torch.zeros(batch, dtype=torch.long, device=device)
        self.sdpa = getattr(self.F, "scaled_dot_product_attention", None)

    def _attend(self, q, k, v, mask):
        if self.sdpa is not None:
            return self.sdpa(q, k, v, attn_mask=mask)
        s = (q @ k.transpose(-1, -2)) * (self.hd ** -0.5)
        return s.masked_fill(~mask, float("-inf")).softmax(-1) @ v

    def step(self):
        """One token: attention over the cache up to the position, the feed-forward, the
        head's greedy choice, its embedding as the next input; the position moves on (and
        wraps at the cache's end)."""
        F = self.F
        b = self.x.shape[0]
        mask = (self.slots <= self.pos).view(1, 1, 1, self.ctx)
        h = self.x
        for i, L in enumerate(self.layers):
            a = F.layer_norm(h, (self.width,), L["ln1"])
            q, k, v = (a @ L["qkv"]).view(b, 1, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
            self.k[i].index_copy_(2, self.pos, k)
            self.v[i].index_copy_(2, self.pos, v)
            o = self._attend(q, self.k[i], self.v[i], mask)
            h = h + o.transpose(1, 2).reshape(b, 1, self.width) @ L["o"]
            a = F.layer_norm(h, (self.width,), L["ln2"])
            h = h + F.gelu(a @ L["fc1"]) @ L["fc2"]
        self.h = h  # the last layer's output (tests compare it)
        self.token.copy_((h[:, 0] @ self.emb.t()).argmax(-1))
        self.x.copy_(self.emb.index_select(0, self.token).view(b, 1, self.width))
        self.pos.add_(1).remainder_(self.ctx)


def _sync(torch, device):
    """The wait for the device's queued work: CUDA's, or nothing on the CPU (tests)."""
    return torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)


def critical_model(torch, name, batch, graph, seq=128, tokens=16, device="cuda", warm=20):
    """(request, describe): request() runs one request of the model `name` (it synchronises
    only where the model itself waits, between decode's tokens), after `warm` requests run
    eagerly; describe is a dict for the tenant's report. On the CPU (device="cpu", tests) in
    float32, without graphs."""
    dtype = torch.half if str(device).startswith("cuda") else torch.float32
    sync = _sync(torch, device)
    if name == "decode":
        dec = Decoder(torch, batch=batch, device=device, dtype=dtype)
        step = dec.step
        if graph:
            step = capture_graph(torch, dec.step).replay

        def request():
            for _ in range(tokens):
                step()
                sync()

        for _ in range(min(warm, 3)):
            request()
        return request, {"model": name, "tokens": tokens, "graph": graph}
    if name == "bert":
        layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, activation="gelu")
        model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
        model = model.to(device=device, dtype=dtype).eval()
        x = torch.randn(batch, seq, 768, device=device, dtype=dtype)
        desc = {"model": name, "seq": seq, "graph": graph}
    elif name == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(weights=None).to(device=device, dtype=dtype).eval()
        x = torch.randn(batch, 3, 224, 224, device=device, dtype=dtype)
        desc = {"model": name, "graph": graph}
    else:
        raise ValueError(f"unknown model {name!r}: resnet50, bert or decode")
    for _ in range(warm):
        model(x)
    if graph:
        return capture_graph(torch, lambda: model(x)).replay, desc
    return (lambda: model(x)), desc


def best_effort_job(torch, name, size=8192, group=4, train_batch=32, device="cuda"):
    """(step, unit, units per step): step() runs one synchronised step of the job `name`."""
    sync = _sync(torch, device)
    if name == "gemm":
        a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
        b = torch.randn(size, size, device=device, dtype=torch.bfloat16)

        def step():
            for _ in range(group):
                a @ b
            sync()

        unit = "matmuls"
        per_step = group
    elif name == "train":
        import torchvision

        model = torchvision.models.resnet50(weights=None).to(device=device, memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(train_batch, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (train_batch,), device=device)
        kind = "cuda" if str(device).startswith("cuda") else "cpu"

        def step():
            with torch.autocast(kind, dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()

        unit = "steps"
        per_step = 1
    else:
        raise ValueError(f"unknown job {name!r}: gemm or train")
    for _ in range(3):
        step()
    return step, unit, per_step
