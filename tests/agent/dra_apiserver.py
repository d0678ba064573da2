#!/usr/bin/python3
"""The fake API server (tests/doctor/fake_apiserver.py) with what a DRA driver
uses of resource.k8s.io/v1: ResourceClaims read by namespace and name, in the
shape the scheduler writes them (status.allocation.devices.results with
consumedCapacity and shareID, and the opaque config), and ResourceSlices
created, read, replaced (resourceVersion checked, as the API server does) and
deleted. Every ResourceSlice write is recorded, and the current ones are
written to --slices FILE after each write, for the test to read.

    dra_apiserver.py --cert C --key K --scenario S.json --slices OUT.json [--token T] [--log FILE]

S.json as fake_apiserver.py's, plus "resourceclaims": [...] and "hold_slice_writes": a file
path: each ResourceSlice write is recorded, then held until that file exists (a slow
API server), up to 60 s; "hold_claim_reads" likewise holds each ResourceClaim GET (recorded
first) until its file exists.
Prints "PORT <n>" on stdout once it listens on 127.0.0.1."""
import argparse
import json
import os
import re
import sys
import time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "doctor"))
import fake_apiserver as fa  # noqa: E402

API = "/apis/resource.k8s.io/v1"
SLICES = re.compile(r"^" + API + r"/resourceslices(?:/([^/]+))?$")
CLAIM = re.compile(r"^" + API + r"/namespaces/([^/]+)/resourceclaims/([^/]+)$")


class Handler(fa.Handler):
    def body(self):
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0") or 0)) or b"null")

    def save(self):
        cfg = self.server.cfg
        tmp = cfg["slices_file"] + ".tmp"
        with open(tmp, "w") as f:
            json.dump(cfg["slices"], f)
        os.rename(tmp, cfg["slices_file"])

    def do_GET(self):
        path = urlsplit(self.path).path
        m, c = SLICES.match(path), CLAIM.match(path)
        if not m and not c:
            return super().do_GET()
        self.record()
        if not self.authorized():
            return
        cfg = self.server.cfg
        hold = cfg["scenario"].get("hold_claim_reads") if c else None
        for _ in range(1200):
            if not hold or os.path.exists(hold):
                break
            time.sleep(0.05)
        with cfg["lock"]:
            if c:
                for cl in cfg["scenario"].get("resourceclaims", []):
                    if cl["metadata"]["namespace"] == c.group(1) and cl["metadata"]["name"] == c.group(2):
                        return self.send(200, dict(cl, kind="ResourceClaim", apiVersion="resource.k8s.io/v1"))
                return self.send(404, fa.status(404, "NotFound",
                                                'resourceclaims.resource.k8s.io "%s" not found' % c.group(2)))
            if m.group(1):
                s = cfg["slices"].get(m.group(1))
                if s is None:
                    return self.send(404, fa.status(404, "NotFound",
                                                    'resourceslices.resource.k8s.io "%s" not found' % m.group(1)))
                return self.send(200, s)
            return self.send(200, {"kind": "ResourceSliceList", "apiVersion": "resource.k8s.io/v1",
                                   "metadata": {"resourceVersion": str(cfg["rv"])},
                                   "items": list(cfg["slices"].values())})

    def write(self, method):
        path = urlsplit(self.path).path
        m = SLICES.match(path)
        if not m:
            return self.refuse()
        obj = self.body() if method != "DELETE" else None
        self.record()
        if not self.authorized():
            return
        cfg = self.server.cfg
        self.note("SLICE-%s %s" % (method, json.dumps(obj, sort_keys=True)))
        hold = cfg["scenario"].get("hold_slice_writes")
        for _ in range(1200):
            if not hold or os.path.exists(hold):
                break
            time.sleep(0.05)
        with cfg["lock"]:
            name = m.group(1)
            if method == "DELETE":
                if cfg["slices"].pop(name, None) is None:
                    return self.send(404, fa.status(404, "NotFound", "not found"))
                self.save()
                return self.send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
            if obj.get("apiVersion") != "resource.k8s.io/v1" or obj.get("kind") != "ResourceSlice":
                return self.send(400, fa.status(400, "BadRequest", "not a resource.k8s.io/v1 ResourceSlice"))
            oname = obj.get("metadata", {}).get("name")
            if method == "POST":
                if name or not oname:
                    return self.send(405 if name else 422, fa.status(422, "Invalid", "metadata.name: Required"))
                if oname in cfg["slices"]:
                    return self.send(409, fa.status(409, "AlreadyExists", '"%s" already exists' % oname))
                code = 201
            else:
                if not name or name != oname:
                    return self.send(400, fa.status(400, "BadRequest", "the name in the body does not match"))
                cur = cfg["slices"].get(name)
                if cur is None:
                    return self.send(404, fa.status(404, "NotFound", "not found"))
                rv = obj.get("metadata", {}).get("resourceVersion")
                if rv and rv != cur["metadata"]["resourceVersion"]:
                    return self.send(409, fa.status(409, "Conflict", "the object has been modified"))
                code = 200
            cfg["rv"] += 1
            obj["metadata"]["resourceVersion"] = str(cfg["rv"])
            cfg["slices"][oname] = obj
            self.save()
            return self.send(code, obj)

    def do_POST(self):
        return self.write("POST")

    def do_PUT(self):
        return self.write("PUT")

    def do_DELETE(self):
        return self.write("DELETE")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--slices", required=True)
    ap.add_argument("--token", default="")
    ap.add_argument("--log", default="")
    a = ap.parse_args()
    with open(a.scenario) as f:
        scenario = json.load(f)
    return fa.serve(Handler, a.cert, a.key, {"scenario": scenario, "token": a.token, "page": 0, "log": a.log,
                                             "slices": {}, "slices_file": a.slices, "rv": 100})


if __name__ == "__main__":
    sys.exit(main())
