#!/usr/bin/python3
"""A fake Kubernetes API server for the doctor's cluster checks and the
kubectl plugin: loopback, TLS, the list endpoints they read (with label and
field selectors), one Node by name, bearer-token auth, paging with
limit/continue, and a log of every request (the doctor must only GET).
PATCH of a Node's labels (the agent's node_labels) only where the scenario
allows it. For the plugin also the two subresources of a Pod it uses:

- pods/proxy: GET .../pods/NAME:PORT/proxy/PATH is passed to the address the
  scenario's "proxy" gives for "NAME:PORT" (a real monitor); an unknown one
  answers 503 as the API server does when it cannot dial the Pod.
- pods/exec: GET .../pods/NAME/exec upgraded to a WebSocket with the
  v4.channel.k8s.io subprotocol. The scenario's "exec" entry for the Pod
  says which container it has, which local program stands for a command
  name and which local folder for a path inside the container; the command
  runs here, its stdout and stderr go back on streams 1 and 2 (stdout in a
  message fragmented over several frames, a ping first, whose pong must come
  back masked), its end as a metav1.Status on stream 3, then a close frame.

    fake_apiserver.py --cert C --key K --scenario S.json [--token T]
                      [--page N] [--log FILE]

S.json: {"nodes": [...], "pods": [...], "runtimeclasses": [...],
         "events": [...], "forbid": ["/api/v1/events", ...],
         "proxy": {"POD:PORT": "http://127.0.0.1:N"}, "patch_nodes": true,
         "exec": {"POD": {"container": "agent", "programs": {"gpuslice": "/abs/gpuslice"},
                          "paths": {"/host": "/abs/fixture"}}}}
Prints "PORT <n>" on stdout once it listens on 127.0.0.1.
"""
import base64
import hashlib
import os
import re
import struct
import subprocess
import urllib.error
import urllib.request
import argparse
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ROUTES = {
    "/api/v1/nodes": ("nodes", "NodeList", "v1"),
    "/api/v1/pods": ("pods", "PodList", "v1"),
    "/api/v1/events": ("events", "EventList", "v1"),
    "/apis/node.k8s.io/v1/runtimeclasses": ("runtimeclasses", "RuntimeClassList", "node.k8s.io/v1"),
}


WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC11B85"
NS_PODS = re.compile(r"^/api/v1/namespaces/([^/]+)/pods$")
ONE_NODE = re.compile(r"^/api/v1/nodes/([^/]+)$")
PROXY = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/:]+):([^/]+)/proxy(/.*)?$")
EXEC = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/exec$")


def labels_match(obj, selector):
    """A label selector's equality and existence terms (what the plugin sends)."""
    labels = obj.get("metadata", {}).get("labels", {}) or {}
    for term in filter(None, selector.split(",")):
        if "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.rstrip("=")) != v.lstrip("="):
                return False
        elif term not in labels:
            return False
    return True


def fields_match(obj, selector):
    for term in filter(None, selector.split(",")):
        k, v = term.split("=", 1)
        cur = obj
        for part in k.split("."):
            cur = cur.get(part, {}) if isinstance(cur, dict) else {}
        if cur != v:
            return False
    return True


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Handler(BaseHTTPRequestHandler):
    server_version = "fake-apiserver/1"

    def log_message(self, fmt, *args):
        pass

    def record(self):
        cfg = self.server.cfg
        with cfg["lock"]:
            if cfg["log"]:
                with open(cfg["log"], "a") as f:
                    f.write("%s %s\n" % (self.command, self.path))

    def send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authorized(self):
        """The bearer token, where the server has one; a 401 answered otherwise."""
        tok = self.server.cfg["token"]
        if tok and self.headers.get("Authorization") != "Bearer " + tok:
            self.send(401, status(401, "Unauthorized", "Unauthorized"))
            return False
        return True

    def do_GET(self):
        self.record()
        cfg = self.server.cfg
        if not self.authorized():
            return
        url = urlsplit(self.path)
        if url.path in cfg["scenario"].get("forbid", []):
            return self.send(403, status(403, "Forbidden",
                                         'nodes is forbidden: User "doctor" cannot list resource'))
        q = parse_qs(url.query)
        sc = cfg["scenario"]
        m = ONE_NODE.match(url.path)
        if m:
            for n in sc.get("nodes", []):
                if n["metadata"]["name"] == m.group(1):
                    return self.send(200, dict(n, kind="Node", apiVersion="v1"))
            return self.send(404, status(404, "NotFound", 'nodes "%s" not found' % m.group(1)))
        m = PROXY.match(url.path)
        if m:
            return self.proxy(m, url)
        m = EXEC.match(url.path)
        if m:
            return self.exec(m, q)
        ns = None
        m = NS_PODS.match(url.path)
        if m:
            ns, route = m.group(1), ROUTES["/api/v1/pods"]
        elif url.path in ROUTES:
            route = ROUTES[url.path]
        else:
            return self.send(404, status(404, "NotFound", "the server could not find the "
                                                          "requested resource"))
        key, kind, api = route
        items = [i for i in sc.get(key, [])
                 if (ns is None or i.get("metadata", {}).get("namespace") == ns) and
                 labels_match(i, q.get("labelSelector", [""])[0]) and
                 fields_match(i, q.get("fieldSelector", [""])[0])]
        start = int(q.get("continue", ["0"])[0] or 0)
        limit = int(q.get("limit", ["0"])[0] or 0) or len(items) or 1
        if cfg["page"]:
            limit = min(limit, cfg["page"])
        page = items[start:start + limit]
        meta = {"resourceVersion": "1"}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        self.send(200, {"kind": kind, "apiVersion": api, "metadata": meta, "items": page})

    def proxy(self, m, url):
        target = self.server.cfg["scenario"].get("proxy", {}).get("%s:%s" % (m.group(2), m.group(3)))
        if not target:
            return self.send(503, status(503, "ServiceUnavailable",
                                         "error trying to reach service: dial tcp 10.42.0.9:%s: "
                                         "connect: connection refused" % m.group(3)))
        path = (m.group(4) or "/") + ("?" + url.query if url.query else "")
        try:
            with urllib.request.urlopen(target + path, timeout=10) as r:
                body, code, ctype = r.read(), r.status, r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            body, code, ctype = e.read(), e.code, e.headers.get("Content-Type", "")
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def note(self, line):
        cfg = self.server.cfg
        with cfg["lock"]:
            if cfg["log"]:
                with open(cfg["log"], "a") as f:
                    f.write(line + "\n")

    def frame(self, opcode, payload, fin=True):
        n = len(payload)
        head = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            head += bytes([n])
        elif n < 65536:
            head += bytes([126]) + struct.pack(">H", n)
        else:
            head += bytes([127]) + struct.pack(">Q", n)
        self.wfile.write(head + payload)
        self.wfile.flush()

    def read_frame(self):
        """A client frame: (opcode, payload, masked)."""
        b0, b1 = self.rfile.read(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self.rfile.read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self.rfile.read(8))[0]
        mask = self.rfile.read(4) if b1 & 0x80 else b"\0\0\0\0"
        data = bytes(c ^ mask[i % 4] for i, c in enumerate(self.rfile.read(n)))
        return b0 & 0x0F, data, bool(b1 & 0x80)

    def misbehave(self, how):
        """A server that breaks the protocol, for the client's error paths."""
        w = self.wfile.write
        if how == "huge":  # a 2^40-byte frame
            w(b"\x82\x7f" + struct.pack(">Q", 1 << 40))
        elif how == "masked":  # servers never mask
            w(b"\x82\x85abcd" + bytes(c ^ b"abcd"[i % 4] for i, c in enumerate(b"\x01hey!")))
        elif how == "opcode":
            w(b"\x83\x02\x01x")
        elif how == "bigping":
            w(b"\x89\x7e\x00\xc8" + b"p" * 200)
        elif how == "cut":  # says 100 bytes, sends 10, hangs up
            w(b"\x82\x64\x01" + b"x" * 9)
        elif how == "nostatus":
            self.frame(0x2, b"\x01half a report\n")
            self.frame(0x8, struct.pack(">H", 1000))
        elif how == "failure":
            self.frame(0x2, b"\x03" + json.dumps({"metadata": {}, "status": "Failure", "reason": "InternalError",
                                                  "message": "container agent is not running"}).encode())
            self.frame(0x8, struct.pack(">H", 1000))
        elif how.startswith("garbage:"):
            import random
            rnd = random.Random(int(how.split(":")[1]))
            w(bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 3000))))
        self.wfile.flush()
        self.close_connection = True

    def exec(self, m, q):
        spec = self.server.cfg["scenario"].get("exec", {}).get(m.group(2))
        if spec is None:
            return self.send(404, status(404, "NotFound", 'pods "%s" not found' % m.group(2)))
        if q.get("container", [""])[0] != spec.get("container"):
            return self.send(400, status(400, "BadRequest",
                                         "container %s is not valid for pod %s"
                                         % (q.get("container", [""])[0], m.group(2))))
        protos = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        if (self.headers.get("Upgrade", "").lower() != "websocket" or
                "v4.channel.k8s.io" not in protos):
            return self.send(400, status(400, "BadRequest", "exec needs a WebSocket upgrade "
                                                            "with v4.channel.k8s.io"))
        argv = q.get("command", [])
        if not argv:
            return self.send(400, status(400, "BadRequest", "you must specify at least 1 command"))
        local = [spec.get("programs", {}).get(argv[0], argv[0])]
        for a in argv[1:]:
            for inside, here in spec.get("paths", {}).items():
                if a == inside or a.startswith(inside + "/"):
                    a = here + a[len(inside):]
            local.append(a)
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        hostile = spec.get("hostile", "")
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", "d3Jvbmc=" if hostile == "badaccept" else accept)
        if hostile != "noproto":
            self.send_header("Sec-WebSocket-Protocol", "v4.channel.k8s.io")
        self.end_headers()
        self.note("EXEC %s" % " ".join(argv))
        if hostile:
            return self.misbehave(hostile)
        try:
            p = subprocess.run(local, capture_output=True, timeout=60)
        except OSError as e:
            p = subprocess.CompletedProcess(local, 126, b"", str(e).encode())
        self.frame(0x9, b"are you there")
        op, data, masked = self.read_frame()
        self.note("PONG %s %s" % ("masked" if masked else "UNMASKED",
                                  "same" if op == 0xA and data == b"are you there" else "WRONG"))
        # stdout as one message in frames of up to 1000 bytes; stderr as one frame.
        out = p.stdout
        chunks = [out[i:i + 1000] for i in range(0, len(out), 1000)] or [b""]
        for i, c in enumerate(chunks):
            self.frame(0x2 if i == 0 else 0x0, (b"\x01" if i == 0 else b"") + c,
                       fin=i == len(chunks) - 1)
        if p.stderr:
            self.frame(0x2, b"\x02" + p.stderr)
        if p.returncode == 0:
            st = {"metadata": {}, "status": "Success"}
        else:
            st = {"metadata": {}, "status": "Failure",
                  "message": "command terminated with non-zero exit code: exit status %d"
                             % p.returncode, "reason": "NonZeroExitCode",
                  "details": {"causes": [{"reason": "ExitCode", "message": str(p.returncode)}]}}
        self.frame(0x2, b"\x03" + json.dumps(st).encode())
        self.frame(0x8, struct.pack(">H", 1000))
        op, data, masked = self.read_frame()
        self.note("CLOSE %s %s" % ("masked" if masked else "UNMASKED",
                                   "1000" if op == 0x8 and data[:2] == struct.pack(">H", 1000)
                                   else "WRONG"))
        self.close_connection = True

    def refuse(self):
        self.record()
        self.send(405, status(405, "MethodNotAllowed", "the doctor must only read"))

    def do_PATCH(self):
        """A JSON merge patch of a Node's labels (the agent's node_labels), where
        the scenario says "patch_nodes": true; refused otherwise."""
        cfg = self.server.cfg
        m = ONE_NODE.match(urlsplit(self.path).path)
        if not cfg["scenario"].get("patch_nodes") or not m:
            return self.refuse()
        body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
        self.record()
        self.note("PATCH-BODY %s %s" % (self.headers.get("Content-Type"), body.decode()))
        if not self.authorized():
            return
        if self.headers.get("Content-Type") != "application/merge-patch+json":
            return self.send(415, status(415, "UnsupportedMediaType", "not a merge patch"))
        patch = json.loads(body)
        with cfg["lock"]:
            for n in cfg["scenario"].get("nodes", []):
                if n["metadata"]["name"] == m.group(1):
                    labels = n["metadata"].setdefault("labels", {})
                    for k, v in patch.get("metadata", {}).get("labels", {}).items():
                        if v is None:
                            labels.pop(k, None)
                        else:
                            labels[k] = v
                    return self.send(200, dict(n, kind="Node", apiVersion="v1"))
        return self.send(404, status(404, "NotFound", 'nodes "%s" not found' % m.group(1)))

    do_POST = do_PUT = do_DELETE = refuse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--token", default="")
    ap.add_argument("--page", type=int, default=0)
    ap.add_argument("--log", default="")
    a = ap.parse_args()
    with open(a.scenario) as f:
        scenario = json.load(f)
    return serve(Handler, a.cert, a.key, {"scenario": scenario, "token": a.token, "page": a.page, "log": a.log})


def serve(handler, cert, key, cfg):
    """Serves handler over TLS on 127.0.0.1 with cfg (and a lock) as the
    server's cfg; prints "PORT <n>" once it listens; until interrupted."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    srv.cfg = dict(cfg, lock=threading.Lock())
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("PORT %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
