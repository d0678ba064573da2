"""Schemas of the two Prometheus Operator kinds deploy/monitoring uses. Their
CRDs are not in Debian's archive, so these are written here from the facts of
the operator's CRDs (monitoring.coreos.com/v1 ServiceMonitor and
PrometheusRule, as its API reference documents them), for the fields a
ServiceMonitor endpoint and a rule group can carry; structural like the
CRDs' own (types, required fields, unknown fields rejected, the duration
pattern, the relabel actions). Draft 7."""

# Prometheus's duration as the CRDs' pattern spells it: 30s, 1m, 1h30m.
DURATION = {"type": "string", "pattern": "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?"
                                         "(([0-9]+)s)?(([0-9]+)ms)?)$"}
STRINGS = {"type": "array", "items": {"type": "string"}}
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
METADATA = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "namespace": {"type": "string"}, "labels": STRING_MAP,
    "annotations": STRING_MAP}}
def top(api_version, kind, spec, metadata=None):
    """An object of one kind: apiVersion, kind, metadata and spec, nothing else."""
    return {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
            "additionalProperties": False,
            "properties": {"apiVersion": {"const": api_version}, "kind": {"const": kind},
                           "metadata": metadata or METADATA, "spec": spec}}


RELABEL = {"type": "object", "additionalProperties": False, "properties": {
    "sourceLabels": {"type": "array", "items": {"type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_]*$"}},
    "separator": {"type": "string"}, "targetLabel": {"type": "string"}, "regex": {"type": "string"},
    "modulus": {"type": "integer"}, "replacement": {"type": "string"},
    "action": {"enum": ["replace", "Replace", "keep", "Keep", "drop", "Drop", "hashmod", "HashMod",
                        "labelmap", "LabelMap", "labeldrop", "LabelDrop", "labelkeep", "LabelKeep",
                        "lowercase", "Lowercase", "uppercase", "Uppercase", "keepequal", "KeepEqual",
                        "dropequal", "DropEqual"]}}}
LABEL_SELECTOR = {"type": "object", "additionalProperties": False, "properties": {
    "matchLabels": STRING_MAP,
    "matchExpressions": {"type": "array", "items": {
        "type": "object", "required": ["key", "operator"], "additionalProperties": False,
        "properties": {"key": {"type": "string"}, "operator": {"type": "string"}, "values": STRINGS}}}}}
ENDPOINT = {"type": "object", "additionalProperties": False, "properties": {
    "port": {"type": "string"}, "targetPort": {"type": ["string", "integer"]}, "path": {"type": "string"},
    "scheme": {"enum": ["http", "https"]}, "params": {"type": "object"},
    "interval": DURATION, "scrapeTimeout": DURATION, "honorLabels": {"type": "boolean"},
    "honorTimestamps": {"type": "boolean"}, "followRedirects": {"type": "boolean"},
    "enableHttp2": {"type": "boolean"}, "tlsConfig": {"type": "object"},
    "bearerTokenSecret": {"type": "object"}, "authorization": {"type": "object"},
    "basicAuth": {"type": "object"}, "oauth2": {"type": "object"},
    "relabelings": {"type": "array", "items": RELABEL},
    "metricRelabelings": {"type": "array", "items": RELABEL}}}
SERVICE_MONITOR = top("monitoring.coreos.com/v1", "ServiceMonitor", {
    "type": "object", "required": ["selector", "endpoints"], "additionalProperties": False,
    "properties": {
        "selector": LABEL_SELECTOR, "endpoints": {"type": "array", "items": ENDPOINT},
        "namespaceSelector": {"type": "object", "additionalProperties": False, "properties": {
            "any": {"type": "boolean"}, "matchNames": STRINGS}},
        "jobLabel": {"type": "string"}, "targetLabels": STRINGS, "podTargetLabels": STRINGS,
        "sampleLimit": {"type": "integer"}, "targetLimit": {"type": "integer"},
        "labelLimit": {"type": "integer"}, "attachMetadata": {"type": "object"}}})
RULE = {"type": "object", "required": ["expr"], "additionalProperties": False,
        "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
        "properties": {"alert": {"type": "string"}, "record": {"type": "string"},
                       "expr": {"type": ["string", "integer"]}, "for": DURATION,
                       "keep_firing_for": DURATION, "labels": STRING_MAP, "annotations": STRING_MAP}}
PROMETHEUS_RULE = top("monitoring.coreos.com/v1", "PrometheusRule", {
    "type": "object", "additionalProperties": False, "properties": {
        "groups": {"type": "array", "items": {
            "type": "object", "required": ["name"], "additionalProperties": False, "properties": {
                "name": {"type": "string", "minLength": 1}, "interval": DURATION,
                "partial_response_strategy": {"type": "string"}, "limit": {"type": "integer"},
                "rules": {"type": "array", "items": RULE}}}}}})
SCHEMAS = {("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
           ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE}
