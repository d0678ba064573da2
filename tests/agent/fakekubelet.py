"""A kubelet played by real gRPC peers (Debian's grpcio under /usr/bin/python3).

Registration server on <dir>/kubelet.sock that, like the kubelet's Register
handler (devicemanager PluginConnected), dials the plugin and calls
GetDevicePluginOptions *before* replying; PodResources server; and a client for
the plugin's DevicePlugin service. Message classes come from our proto/ files
compiled with protoc --python_out into a temp dir (no grpc_tools needed)."""
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures

import grpc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402,F401  (the agent tests use fk.Tap)

SRC = os.environ.get("GS_SRC_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("GS_BUILD_DIR", os.path.join(SRC, "build"))


def load_protos(tmp):
    out = os.path.join(tmp, "pb")
    os.makedirs(out, exist_ok=True)
    subprocess.check_call(["protoc", "-I" + os.path.join(SRC, "proto"), "--python_out=" + out,
                           "deviceplugin_v1beta1.proto", "podresources_v1.proto"])
    sys.path.insert(0, out)
    import deviceplugin_v1beta1_pb2 as dp  # noqa
    import podresources_v1_pb2 as pr  # noqa
    return dp, pr


def load_dra_protos(tmp):
    """Plugin registration, DRA v1 and DRA v1beta1 message classes."""
    out = os.path.join(tmp, "pbdra")
    os.makedirs(out, exist_ok=True)
    subprocess.check_call(["protoc", "-I" + os.path.join(SRC, "proto"), "--python_out=" + out,
                           "pluginregistration_v1.proto", "dra_v1.proto", "dra_v1beta1.proto"])
    sys.path.insert(0, out)
    import pluginregistration_v1_pb2 as reg  # noqa
    import dra_v1_pb2 as v1  # noqa
    import dra_v1beta1_pb2 as v1beta1  # noqa
    return reg, v1, v1beta1


def unary(path, sock, method, req, resp_cls, timeout=10):
    """One call, as the kubelet makes it, on a plugin's unix socket."""
    with grpc.insecure_channel("unix:" + sock, options=[("grpc.default_authority", "localhost")]) as ch:
        grpc.channel_ready_future(ch).result(timeout=timeout)
        return ch.unary_unary(path + "/" + method, request_serializer=lambda m: m.SerializeToString(),
                              response_deserializer=resp_cls.FromString)(req, timeout=timeout)


class Kubelet:
    """hold=True: Register waits (until stop) before it calls the plugin back,
    as a kubelet busy elsewhere would; registering tells when a Register came in."""

    def __init__(self, dp, kdir, hold=False):
        self.dp = dp
        self.kdir = kdir
        self.registrations = queue.Queue()
        self.server = None
        self.registering = threading.Event()
        self.released = threading.Event()
        if not hold:
            self.released.set()

    def start(self):
        dp = self.dp

        def register(req, ctx):
            t = time.monotonic()
            self.registering.set()
            self.released.wait(30)
            err = None
            try:
                ch = grpc.insecure_channel("unix:" + os.path.join(self.kdir, req.endpoint),
                                           options=[("grpc.default_authority", "localhost")])
                grpc.channel_ready_future(ch).result(timeout=10)
                opts = ch.unary_unary("/v1beta1.DevicePlugin/GetDevicePluginOptions",
                                      request_serializer=dp.Empty.SerializeToString,
                                      response_deserializer=dp.DevicePluginOptions.FromString)(
                    dp.Empty(), timeout=10)
                ch.close()
            except Exception as e:  # the test reports it
                err, opts = repr(e), None
            self.registrations.put((t, req, opts, err))
            return dp.Empty()

        h = grpc.method_handlers_generic_handler("v1beta1.Registration", {
            "Register": grpc.unary_unary_rpc_method_handler(
                register, request_deserializer=dp.RegisterRequest.FromString,
                response_serializer=dp.Empty.SerializeToString)})
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers((h,))
        self.server.add_insecure_port("unix:" + os.path.join(self.kdir, "kubelet.sock"))
        self.server.start()

    def stop(self):
        self.released.set()
        if self.server:
            self.server.stop(0).wait()
            self.server = None

    def wait_registrations(self, n, timeout=10):
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                got.append(self.registrations.get(timeout=left))
            except queue.Empty:
                break
        return got


class PodResources:
    def __init__(self, pr, path):
        self.pr = pr
        self.path = path
        self.response = pr.ListPodResourcesResponse()
        self.calls = 0

    def start(self):
        pr = self.pr

        def lst(req, ctx):
            self.calls += 1
            return self.response

        h = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
            "List": grpc.unary_unary_rpc_method_handler(
                lst, request_deserializer=pr.ListPodResourcesRequest.FromString,
                response_serializer=pr.ListPodResourcesResponse.SerializeToString)})
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.server.add_generic_rpc_handlers((h,))
        self.server.add_insecure_port("unix:" + self.path)
        self.server.start()

    def stop(self):
        self.server.stop(0).wait()


class Plugin:
    """Client of one plugin socket, speaking like the kubelet."""

    def __init__(self, dp, path):
        self.dp = dp
        self.ch = grpc.insecure_channel("unix:" + path, options=[("grpc.default_authority", "localhost")])
        grpc.channel_ready_future(self.ch).result(timeout=10)

    def call(self, method, req, resp_cls, raw=False, timeout=10):
        ser = (lambda b: b) if raw else (lambda m: m.SerializeToString())
        return self.ch.unary_unary("/v1beta1.DevicePlugin/" + method, request_serializer=ser,
                                   response_deserializer=resp_cls.FromString)(req, timeout=timeout)

    def options(self):
        return self.call("GetDevicePluginOptions", self.dp.Empty(), self.dp.DevicePluginOptions)

    def allocate(self, *containers, raw=None):
        dp = self.dp
        req = raw if raw is not None else dp.AllocateRequest(
            container_requests=[dp.ContainerAllocateRequest(devices_ids=list(c)) for c in containers])
        return self.call("Allocate", req, dp.AllocateResponse, raw=raw is not None)

    def preferred(self, available, size, must=()):
        dp = self.dp
        req = dp.PreferredAllocationRequest(container_requests=[dp.ContainerPreferredAllocationRequest(
            available_deviceIDs=list(available), must_include_deviceIDs=list(must), allocation_size=size)])
        return self.call("GetPreferredAllocation", req, dp.PreferredAllocationResponse)

    def watch(self):
        """Starts ListAndWatch; returns a queue of device lists [(id, health)]."""
        q = queue.Queue()
        call = self.ch.unary_stream("/v1beta1.DevicePlugin/ListAndWatch",
                                    request_serializer=self.dp.Empty.SerializeToString,
                                    response_deserializer=self.dp.ListAndWatchResponse.FromString)(self.dp.Empty())

        def pump():
            try:
                for m in call:
                    q.put([(d.ID, d.health) for d in m.devices])
            except grpc.RpcError:
                q.put(None)
        threading.Thread(target=pump, daemon=True).start()
        return q, call

    def close(self):
        self.ch.close()


class Agent:
    def __init__(self, tmp, name, args, env=None):
        self.log = os.path.join(tmp, name + ".log")
        self.args = args
        self.env = dict(os.environ, **(env or {}))
        self.proc = None

    def start(self):
        exe = os.path.join(BUILD, "gpuslice")
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen([exe, "agent"] + self.args, stdout=self.logf, stderr=self.logf,
                                     env=self.env)
        return self

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.logf.close()
        return rc

    def tail(self, n=30):
        with open(self.log, "rb") as f:
            return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")


def read_limits(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "=" in line:
                k, v = line.split("=", 1)
                out[k.strip()] = v.strip()
    return out


def wait_for(pred, timeout=10.0, step=0.05):
    """pred's first true value within timeout, else its last."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()
