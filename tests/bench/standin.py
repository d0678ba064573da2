"""A stand-in torch and torchvision for the bench scripts' tests (no GPU): the parts every
probe uses (events timed on the host clock, streams, graph capture, synchronize), to which
each test adds its own GPU (what a graph's replay costs, what a kernel leaves behind)."""
import os

COMMON = r'''
import contextlib, os, sys, time
half = bfloat16 = "dtype"
no_grad = contextlib.nullcontext


class _Event:
    def __init__(self, **k):
        self.t = 0.0

    def record(self):
        self.t = time.perf_counter()

    def query(self):
        return True

    def elapsed_time(self, other):
        return (other.t - self.t) * 1000


class _Stream:
    def wait_stream(self, s):
        pass


class _Cuda:
    Event = _Event
    Stream = _Stream

    @staticmethod
    def current_stream():
        return _Stream()

    @staticmethod
    def stream(s):
        return contextlib.nullcontext()

    @staticmethod
    def graph(g):
        return contextlib.nullcontext()

    @staticmethod
    def synchronize():
        pass
'''

TORCHVISION = r'''
class _Model:
    def half(self):
        return self

    cuda = eval = half

    def to(self, *a, **k):
        return self

    def __call__(self, x):
        return x


class models:
    @staticmethod
    def resnet50(weights=None):
        return _Model()
'''


def install(d, torch_body):
    """Packages torch (COMMON, then torch_body, which defines `class cuda(_Cuda)`) and
    torchvision under d, for PYTHONPATH."""
    for pkg, body in (("torch", COMMON + torch_body), ("torchvision", TORCHVISION)):
        os.mkdir(os.path.join(d, pkg))
        with open(os.path.join(d, pkg, "__init__.py"), "w") as f:
            f.write(body)
