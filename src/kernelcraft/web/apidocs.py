"""``/api/docs``: the OpenAPI schema as a plain server-rendered page.

Swagger UI loads its scripts and styles from a CDN, so the page was blank on a machine without
internet access (and it needed the site's content-security policy lifted). This page is built from
the same ``app.openapi()`` document on the server, under the site's own CSP: every operation with
its summary, parameters, request body and responses, then every schema with its fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

METHODS = ("get", "post", "put", "patch", "delete")


@dataclass
class Operation:
    method: str
    path: str
    summary: str
    description: str
    parameters: list[tuple[str, str, str, bool]] = field(default_factory=list)  # (name, in, type, required)
    body: str = ""  # the request body's schema or media type
    responses: list[tuple[str, str]] = field(default_factory=list)  # (status, description and schema)
    csrf: bool = False  # state-changing: needs the session cookie and X-CSRF-Token

    @property
    def anchor(self) -> str:
        return f"{self.method}-{self.path}".replace("/", "-").replace("{", "").replace("}", "").strip("-")


def _type(schema: dict) -> str:
    """A schema in a few words: a $ref's name, a type, an array's item, a union of those."""
    if not isinstance(schema, dict) or not schema:  # additionalProperties may be plain `true`
        return "any"
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_type(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"list[{_type(schema.get('items', {}))}]"
    if schema.get("type") == "object" and "additionalProperties" in schema:
        return f"dict[str, {_type(schema['additionalProperties'] or {})}]"
    return str(schema.get("type", "object"))


def _body(op: dict) -> str:
    content = (op.get("requestBody") or {}).get("content") or {}
    return "; ".join(f"{media}: {_type(c.get('schema', {}))}" for media, c in content.items())


def operations(spec: dict) -> list[Operation]:
    out = []
    for path, item in spec.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            params = [(p["name"], p.get("in", ""), _type(p.get("schema", {})), bool(p.get("required")))
                      for p in op.get("parameters", [])]
            responses = []
            for status, r in op.get("responses", {}).items():
                schemas = [_type(c.get("schema", {})) for c in (r.get("content") or {}).values()]
                text = r.get("description", "")
                if schemas and schemas != ["any"]:
                    text += f" ({', '.join(schemas)})"
                responses.append((status, text))
            out.append(Operation(method.upper(), path, op.get("summary", ""), op.get("description", ""),
                                 params, _body(op), responses, csrf=method != "get"))
    return out


def schemas(spec: dict) -> list[tuple[str, list[tuple[str, str, bool]]]]:
    """(name, [(field, type, required)]) for every component schema."""
    out = []
    for name, s in sorted(spec.get("components", {}).get("schemas", {}).items()):
        required = set(s.get("required", []))
        out.append((name, [(f, _type(p), f in required) for f, p in s.get("properties", {}).items()]))
    return out
