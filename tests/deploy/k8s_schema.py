"""JSON Schemas of Kubernetes kinds, from the API's OpenAPI definitions as
Debian's python3-kubernetes carries them offline (22.6: Kubernetes 1.22).
Its generated models hold, per definition, each field's JSON name and type
(`attribute_map`, `openapi_types`) and refuse a missing required field in
their setters; the API classes name each kind's group, version and scope
(`AppsV1Api.create_namespaced_daemon_set`: apps/v1, namespaced). From these
this builds a draft-7 schema per kind with required fields, types, and
unknown fields rejected (additionalProperties: false), as the API server's
strict field validation does."""
import re

import kubernetes.client as kc
import kubernetes.client.models as models
from kubernetes.client.configuration import Configuration

PRIMITIVE = {"str": {"type": "string"}, "int": {"type": "integer"}, "float": {"type": "number"},
             "bool": {"type": "boolean"}, "datetime": {"type": "string"}, "date": {"type": "string"},
             "object": {}}  # object: IntOrString, RawExtension, a JSON value


def _snake(kind):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def _api_class(group, version):
    """AppsV1Api for apps/v1, CoreV1Api for v1, RbacAuthorizationV1Api for rbac.authorization.k8s.io/v1."""
    g = group.split(".k8s.io")[0] if group else "core"
    name = "".join(p.capitalize() for p in re.split(r"[.-]", g)) + version.capitalize() + "Api"
    return getattr(kc, name, None)


def kind_info(api_version, kind):
    """(model class, namespaced) for an apiVersion and kind; ValueError when the API has no such kind."""
    group, _, version = api_version.rpartition("/")
    api = _api_class(group, version)
    if api is None:
        raise ValueError("no API group/version %s in Kubernetes 1.22" % api_version)
    s = _snake(kind)
    if hasattr(api, "create_namespaced_" + s):
        namespaced = True
    elif hasattr(api, "create_" + s):
        namespaced = False
    else:
        raise ValueError("%s has no kind %s" % (api_version, kind))
    cls = getattr(models, version.capitalize() + kind, None)
    if cls is None:
        raise ValueError("no model for %s %s" % (api_version, kind))
    return cls, namespaced


def _required(cls):
    """Fields whose setter refuses None ("must not be `None`")."""
    obj = cls.__new__(cls)
    obj.local_vars_configuration = Configuration()
    out = []
    for attr in cls.openapi_types:
        try:
            setattr(obj, attr, None)
        except ValueError as e:
            if "must not be `None`" in str(e):
                out.append(cls.attribute_map[attr])
    return sorted(out)


def _type(t, defs):
    if t in PRIMITIVE:
        return dict(PRIMITIVE[t])
    m = re.fullmatch(r"list\[(.+)\]", t)
    if m:
        return {"type": "array", "items": _type(m.group(1), defs)}
    m = re.fullmatch(r"dict\(str, (.+)\)", t)
    if m:
        return {"type": "object", "additionalProperties": _type(m.group(1), defs)}
    _define(getattr(models, t), defs)
    return {"$ref": "#/definitions/" + t}


def _define(cls, defs):
    name = cls.__name__
    if name in defs:
        return
    defs[name] = {}  # placeholder: definitions refer to themselves (JSONSchemaProps)
    props = {cls.attribute_map[a]: _type(t, defs) for a, t in cls.openapi_types.items()}
    defs[name] = {"type": "object", "properties": props, "required": _required(cls),
                  "additionalProperties": False}


def schema(api_version, kind):
    """The draft-7 schema of one object of this kind, apiVersion and kind pinned."""
    cls, _ = kind_info(api_version, kind)
    defs = {}
    _define(cls, defs)
    top = dict(defs[cls.__name__])
    top["properties"] = dict(top["properties"], apiVersion={"const": api_version}, kind={"const": kind})
    top["required"] = sorted(set(top["required"]) | {"apiVersion", "kind", "metadata"})
    top["definitions"] = defs
    return top
