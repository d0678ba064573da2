"""What deploy/ asks Prometheus, and a real Prometheus to ask: shared by
tests/monitor/promql_test.py and tests/e2e/node_e2e.py.

- expressions(): every PromQL expression in deploy/grafana/*.json (panel
  targets, template variables) and in every `kind: PrometheusRule` under
  deploy/ (any *.yaml, so rules added there are found wherever they are).
- metric_names(expr): the metric names an expression selects.
- Prometheus: Debian's prometheus scraping one target every second, in a
  temporary folder, asked through its HTTP API."""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

SRC = os.environ.get("GS_SRC_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Grafana's variables, as a query on a short history needs them.
GRAFANA_VARS = {"$__rate_interval": "20s", "$__interval": "5s", "$__range": "5m"}

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan", "atan2", "start", "end"}


def _grafana_exprs(path):
    out = []

    def walk(o, where):
        if isinstance(o, dict):
            title = o.get("title") or o.get("name") or where
            if isinstance(o.get("expr"), str) and o["expr"].strip():
                out.append(("%s: %s" % (os.path.basename(path), title), o["expr"]))
            q = o.get("query")
            if o.get("type") == "query" and isinstance(q, dict) and q.get("query"):
                out.append(("%s: variable %s" % (os.path.basename(path), o.get("name")), q["query"]))
            elif o.get("type") == "query" and isinstance(q, str) and q:
                out.append(("%s: variable %s" % (os.path.basename(path), o.get("name")), q))
            for v in o.values():
                walk(v, title)
        elif isinstance(o, list):
            for v in o:
                walk(v, where)
    with open(path) as f:
        walk(json.load(f), "")
    return out


def _rule_exprs(path):
    out = []
    with open(path) as f:
        for doc in yaml.safe_load_all(f):
            if not isinstance(doc, dict) or doc.get("kind") != "PrometheusRule":
                continue
            for g in (doc.get("spec") or {}).get("groups") or []:
                for r in g.get("rules") or []:
                    if r.get("expr"):
                        name = r.get("alert") or r.get("record")
                        out.append(("%s: %s" % (os.path.relpath(path, SRC), name), str(r["expr"])))
    return out


def expressions(src=SRC):
    """[(where, expr)] of deploy/'s dashboards and rules."""
    out = []
    for p in sorted(glob.glob(os.path.join(src, "deploy", "grafana", "*.json"))):
        out += _grafana_exprs(p)
    for p in sorted(glob.glob(os.path.join(src, "deploy", "**", "*.yaml"), recursive=True)):
        out += _rule_exprs(p)
    return out


def grafana_query(expr):
    """A dashboard's expression as Prometheus takes it: label_values() is
    Grafana's, the selector inside is the query; variables get values."""
    m = re.match(r"^\s*label_values\((.*),\s*\w+\s*\)\s*$", expr, re.S)
    if m:
        expr = m.group(1)
    for k, v in GRAFANA_VARS.items():
        expr = expr.replace(k, v)
    return re.sub(r"\$\{?\w+\}?", ".*", expr)  # a template variable: any value


def metric_names(expr):
    """The metric names an expression selects (bare names and __name__ matchers)."""
    e = grafana_query(expr)
    names = set(re.findall(r'__name__\s*=\s*"([^"]+)"', e))
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', e)  # strings
    e = re.sub(r"\{[^{}]*\}", " ", e)                             # label matchers
    e = re.sub(r"\[[^\[\]]*\]", " ", e)                           # ranges, subqueries
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", e)
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word, rest = m.group(0), e[m.end():].lstrip()
        if rest.startswith("(") or word.lower() in KEYWORDS:
            continue  # a function or an aggregation, or a keyword
        if re.match(r"^\d", word):
            continue
        names.add(word)
    return names


def sampled(body):
    """The metric names a text-format scrape has samples of (a summary's _sum and _count)."""
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{|\s)", body, re.M)}


def exported(body):
    """The metric names a scrape carries: those it has samples of, and every family it
    declares (# TYPE), which may have none now (the audit's, while it cannot run)."""
    names = sampled(body)
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M):
        names.add(name)
        if kind in ("summary", "histogram"):
            names |= {name + "_sum", name + "_count"}
        if kind == "histogram":
            names.add(name + "_bucket")
    return names


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """Debian's prometheus, scraping target (host:port) every second."""

    def __init__(self, target, labels=None, binary=None):
        self.binary = binary or shutil.which("prometheus")
        self.dir = tempfile.mkdtemp(prefix="gs-prom-")
        self.port = free_port()
        cfg = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
               "scrape_configs": [{"job_name": "gpuslice-monitor",
                                   "static_configs": [{"targets": [target], "labels": labels or {}}]}]}
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            yaml.safe_dump(cfg, f)
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen([self.binary, "--config.file=" + os.path.join(self.dir, "prometheus.yml"),
                                      "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
                                      "--web.listen-address=127.0.0.1:%d" % self.port],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path, urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            try:  # Prometheus's own errors are JSON; a server still starting may answer text
                return json.load(e)
            except ValueError:
                return {"status": "error", "error": "HTTP %d: not JSON" % e.code}
        except (OSError, ValueError) as e:
            return {"status": "error", "error": str(e)}

    def query(self, expr):
        """(ok, series or the error)."""
        r = self.api("query", query=expr)
        if r.get("status") != "success":
            return False, r.get("error", r)
        return True, r["data"]["result"]

    def wait_scraped(self, samples=4, timeout=60):
        """Until the target is up and has been scraped `samples` times; True when it has."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            ok, res = self.query("count_over_time(up[1m])")
            if ok and res and float(res[0]["value"][1]) >= samples:
                ok, up = self.query("up")
                return bool(ok and up and up[0]["value"][1] == "1")
            time.sleep(0.5)
        return False

    def logs(self):
        self.log.flush()
        with open(os.path.join(self.dir, "log")) as f:
            return f.read()[-2000:]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def check(prom, body, src=SRC):
    """Checks each of deploy/'s expressions against a scrape (body) and a
    Prometheus that has scraped it: [(ok, name, detail)].
    - every gpuslice_* metric it names is one the monitor exports (the scrape);
      a name of another exporter (up: Prometheus's own per target;
      kube_*: kube-state-metrics) is said;
    - Prometheus evaluates it;
    - every gpuslice metric it names has series in Prometheus, and so does the
      whole expression unless it is a condition (a comparison that holds only
      when something is wrong)."""
    have, now = exported(body), sampled(body)
    out = []
    for where, expr in expressions(src):
        names = metric_names(expr)
        ours = {n for n in names if n.startswith("gpuslice_")}
        others = names - ours
        missing = ours - have
        out.append((not missing and all(n == "up" or n.startswith("kube_") for n in others),
                    "%s names only metrics the monitor exports%s" %
                    (where, " (and %s from elsewhere)" % ", ".join(sorted(others)) if others else ""),
                    {"missing": sorted(missing), "names": sorted(names), "expr": expr}))
        q = grafana_query(expr)
        good, res = prom.query(q)
        # A family the scrape declares without samples (the audit off on this node)
        # cannot have series; its name was checked above.
        idle = sorted(n for n in ours if n in have and n not in now)
        empty = [n for n in sorted(ours) if n not in idle and not (prom.query(n)[1] or [])]
        condition = re.search(r"(==|!=|>=|<=|>|<)\s*[\d.]+\s*$", q.strip()) or " > 0" in q or "== 0" in q
        note = ""
        if idle:
            note = " (%s: no samples in this scrape)" % ", ".join(idle)
        elif not res and condition:
            note = " (a condition, false here; its metrics have series)"
        out.append((good and not empty and (bool(res) or bool(condition) or bool(idle)),
                    "%s: Prometheus answers it%s" % (where, note),
                    {"query": q, "error": None if good else res, "metrics without series": empty,
                     "series": len(res) if good else 0}))
    return out
