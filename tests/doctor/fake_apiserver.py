#!/usr/bin/python3
"""A fake Kubernetes API server for the doctor's cluster checks: loopback,
TLS, the four list endpoints the doctor reads, bearer-token auth, paging
with limit/continue, and a log of every request (the doctor must only GET).

    fake_apiserver.py --cert C --key K --scenario S.json [--token T]
                      [--page N] [--log FILE]

S.json: {"nodes": [...], "pods": [...], "runtimeclasses": [...],
         "events": [...], "forbid": ["/api/v1/events", ...]}
Prints "PORT <n>" on stdout once it listens on 127.0.0.1.
"""
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

    def do_GET(self):
        self.record()
        cfg = self.server.cfg
        if cfg["token"] and self.headers.get("Authorization") != "Bearer " + cfg["token"]:
            return self.send(401, status(401, "Unauthorized", "Unauthorized"))
        url = urlsplit(self.path)
        if url.path in cfg["scenario"].get("forbid", []):
            return self.send(403, status(403, "Forbidden",
                                         'nodes is forbidden: User "doctor" cannot list resource'))
        if url.path not in ROUTES:
            return self.send(404, status(404, "NotFound", "the server could not find the "
                                                          "requested resource"))
        key, kind, api = ROUTES[url.path]
        items = cfg["scenario"].get(key, [])
        q = parse_qs(url.query)
        start = int(q.get("continue", ["0"])[0] or 0)
        limit = int(q.get("limit", ["0"])[0] or 0) or len(items) or 1
        if cfg["page"]:
            limit = min(limit, cfg["page"])
        page = items[start:start + limit]
        meta = {"resourceVersion": "1"}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        self.send(200, {"kind": kind, "apiVersion": api, "metadata": meta, "items": page})

    def refuse(self):
        self.record()
        self.send(405, status(405, "MethodNotAllowed", "the doctor must only read"))

    do_POST = do_PUT = do_PATCH = do_DELETE = refuse


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
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.cfg = {"scenario": scenario, "token": a.token, "page": a.page, "log": a.log,
               "lock": threading.Lock()}
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("PORT %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
