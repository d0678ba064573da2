"""Schemas of the Dynamic Resource Allocation kinds deploy/dra renders, which
python3-kubernetes (the 1.22 API) does not know: resource.k8s.io/v1 DeviceClass,
written here from the facts of the Kubernetes API reference (DeviceClassSpec:
selectors of CEL expressions, opaque configuration by driver, the optional
extended resource name); structural, as the API server's own validation is:
types, required fields, unknown fields rejected. Draft 7."""

from monitoring_schema import METADATA, top

SELECTOR = {"type": "object", "additionalProperties": False, "required": ["cel"], "properties": {
    "cel": {"type": "object", "additionalProperties": False, "required": ["expression"], "properties": {
        "expression": {"type": "string", "minLength": 1}}}}}
CONFIG = {"type": "object", "additionalProperties": False, "properties": {
    "opaque": {"type": "object", "additionalProperties": False, "required": ["driver", "parameters"],
               "properties": {"driver": {"type": "string", "minLength": 1},
                              "parameters": {"type": "object"}}}}}
DEVICE_CLASS = top("resource.k8s.io/v1", "DeviceClass", {
    "type": "object", "additionalProperties": False, "properties": {
        "selectors": {"type": "array", "maxItems": 32, "items": SELECTOR},
        "config": {"type": "array", "maxItems": 32, "items": CONFIG},
        "extendedResourceName": {"type": "string"}}}, METADATA)
SCHEMAS = {("resource.k8s.io/v1", "DeviceClass"): DEVICE_CLASS}
