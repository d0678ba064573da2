#!/usr/bin/python3
"""The source tree's include rules (docs/build.md, "Which folder may include
which"): library parts never include a verb, no verb includes another verb's
folder, and the folders form no circle. TAP output."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402

SRC = os.path.join(os.environ.get("GS_SRC_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "src")
LIBRARIES = {"common", "contract", "node", "kubelet", "kube", "sim", "interposer"}
VERBS = {"agent", "run", "doctor", "monitor", "kubectl"}
# What each folder may include besides itself ("proto" is the kubelet layer's generated code).
ALLOWED = {
    "common": set(),
    "contract": {"common"},
    "node": {"common", "contract"},
    "kubelet": {"common", "proto"},
    "kube": {"common"},
    "sim": {"common"},
    "interposer": {"common", "contract"},
    "agent": {"common", "contract", "node", "kubelet", "kube", "proto"},
    "run": {"common", "contract", "node"},
    "doctor": {"common", "contract", "node", "kube"},
    "monitor": {"common", "contract", "kubelet", "node"},
    "kubectl": {"common", "contract", "kube"},
    "cli": {"common", "contract"} | VERBS,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

tap = Tap()
folders = sorted(d for d in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, d)))
tap.ok(set(folders) == set(ALLOWED), "every folder under src/ has a rule, and every rule a folder",
       (folders, sorted(ALLOWED)))

edges = {f: set() for f in folders}
bad = []
for f in folders:
    for name in sorted(os.listdir(os.path.join(SRC, f))):
        if not name.endswith((".c", ".h")):
            continue
        with open(os.path.join(SRC, f, name)) as fh:
            for inc in INCLUDE.findall(fh.read()):
                if "/" not in inc:
                    if not os.path.exists(os.path.join(SRC, f, inc)):
                        bad.append("%s/%s: \"%s\" is not in its own folder" % (f, name, inc))
                    continue
                to = inc.split("/", 1)[0]
                if to == f:
                    continue
                edges[f].add(to)
                if to not in ALLOWED.get(f, set()):
                    bad.append("%s/%s includes %s" % (f, name, inc))
tap.ok(not bad, "every include follows the folder rules", "\n".join(bad))

lib_to_verb = ["%s -> %s" % (f, t) for f in LIBRARIES for t in edges.get(f, ()) if t in VERBS | {"cli"}]
tap.ok(not lib_to_verb, "no library part includes a verb", lib_to_verb)
verb_to_verb = ["%s -> %s" % (f, t) for f in VERBS for t in edges.get(f, ()) if t in VERBS and t != f]
tap.ok(not verb_to_verb, "no verb includes another verb's folder", verb_to_verb)


def cycle():
    state = {}

    def visit(n, path):
        state[n] = 1
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return path + [n, m]
            if m in edges and not state.get(m):
                c = visit(m, path + [n])
                if c:
                    return c
        state[n] = 2
        return None

    for n in folders:
        if not state.get(n):
            c = visit(n, [])
            if c:
                return c
    return None


c = cycle()
tap.ok(c is None, "the folders form no circle", c and " -> ".join(c))
sys.exit(tap.done())
