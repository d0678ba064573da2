"""bench/workloads.py on the CPU with a real PyTorch (Debian's python3-torch and
python3-torchvision, where installed; CI does without them and skips): every model and job
runs, and the decoder's token loop over its key/value cache picks the tokens a full causal
forward over the same inputs picks. Device time is short; a workload that breaks there
wastes a whole call."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
SRC = os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SRC, "bench"))
from tap import Tap  # noqa: E402


def reference(torch, dec, inputs):
    """The decoder's last layer's output and greedy token after each prefix of `inputs` (a
    list of (batch, 1, width) embeddings), from a full causal forward with no cache."""
    F = torch.nn.functional
    x = torch.cat(inputs, dim=1)  # (batch, n, width)
    b, n, w = x.shape
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    h = x
    for L in dec.layers:
        a = F.layer_norm(h, (w,), L["ln1"])
        q, k, v = (a @ L["qkv"]).view(b, n, 3, dec.heads, dec.hd).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) * (dec.hd ** -0.5)
        o = s.masked_fill(~causal, float("-inf")).softmax(-1) @ v
        h = h + o.transpose(1, 2).reshape(b, n, w) @ L["o"]
        a = F.layer_norm(h, (w,), L["ln2"])
        h = h + F.gelu(a @ L["fc1"]) @ L["fc2"]
    return h, (h @ dec.emb.t()).argmax(-1)  # (batch, n, width), (batch, n)


def main():
    try:
        import torch
        import torchvision  # noqa: F401
    except ImportError:
        print("1..0 # SKIP needs python3-torch and python3-torchvision (not in CI)")
        return 0
    import workloads

    torch.manual_seed(0)
    t = Tap()
    # The cache: a small decoder, its tokens step by step against the full forward.
    dec = workloads.Decoder(torch, batch=2, layers=2, width=64, heads=4, ctx=8, vocab=50, device="cpu",
                            dtype=torch.float32)
    inputs, got, hidden = [], [], []
    for _ in range(6):
        inputs.append(dec.x.clone())
        dec.step()
        got.append(dec.token.clone())
        hidden.append(dec.h.clone())
    want_h, want = reference(torch, dec, inputs)
    got_h = torch.cat(hidden, dim=1)
    t.ok(torch.allclose(got_h, want_h, rtol=1e-5, atol=1e-6),
         "decode: the cached token loop's outputs are the full causal forward's",
         f"largest difference {float((got_h - want_h).abs().max()):.3g}")
    t.ok(torch.equal(torch.stack(got, dim=1), want), "decode: and so are its tokens",
         f"{torch.stack(got, dim=1).tolist()} against {want.tolist()}")
    t.ok(torch.equal(dec.x[:, 0], dec.emb[dec.token]), "decode: the next input is the chosen token's embedding")
    written = dec.k.abs().sum(dim=(0, 1, 2, 4)) > 0
    t.ok(written.tolist() == [True] * 6 + [False] * 2 and int(dec.pos) == 6,
         "decode: the cache holds the six positions written, the position is 6", written.tolist())
    for _ in range(3):
        dec.step()
    t.ok(int(dec.pos) == 1, "decode: the position wraps at the cache's end", int(dec.pos))

    # Each critical model and best-effort job the harness names, at small sizes.
    with torch.no_grad():
        req, desc = workloads.critical_model(torch, "decode", 1, False, tokens=3, device="cpu", warm=1)
        req()
        t.ok(desc == {"model": "decode", "tokens": 3, "graph": False},
             "decode: a request runs and says what it is", desc)
        req, desc = workloads.critical_model(torch, "bert", 2, False, seq=16, device="cpu", warm=1)
        y = req()
        t.ok(tuple(y.shape) == (2, 16, 768) and bool(torch.isfinite(y).all()) and desc["seq"] == 16,
             "bert: one forward of 2 sequences of 16 tokens", tuple(y.shape))
        req, desc = workloads.critical_model(torch, "resnet50", 1, False, device="cpu", warm=1)
        y = req()
        t.ok(tuple(y.shape) == (1, 1000), "resnet50: one forward", tuple(y.shape))
    step, unit, per = workloads.best_effort_job(torch, "train", train_batch=2, device="cpu")
    model_params = [p for p in step.__closure__ if isinstance(getattr(p, "cell_contents", None), torch.nn.Module)]
    w = model_params[0].cell_contents.fc.weight
    before = w.detach().clone()
    step()
    t.ok(unit == "steps" and per == 1 and not torch.equal(before, w.detach()),
         "train: a step moves the weights, and counts as one step", unit)
    step, unit, per = workloads.best_effort_job(torch, "gemm", size=32, group=3, device="cpu")
    step()
    t.ok(unit == "matmuls" and per == 3, "gemm: a step is --group matmuls", (unit, per))
    for fn, name, known in ((lambda: workloads.critical_model(torch, "gpt5", 1, False, device="cpu"), "model",
                             "resnet50, bert or decode"),
                            (lambda: workloads.best_effort_job(torch, "mine", device="cpu"), "job", "gemm or train")):
        try:
            fn()
            t.ok(False, f"an unknown {name} is refused")
        except ValueError as ex:
            t.ok(known in str(ex), f"an unknown {name} is refused, naming the known ones", str(ex))
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
