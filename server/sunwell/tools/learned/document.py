"""An OpenAPI document read into what Sunwell learns from it: its operations, their servers, its security schemes.

Parsing and validation are openapi-spec-validator's (Swagger 2.0, OpenAPI 3.0, 3.1), `$ref`s are resolved by
jsonschema-path's SchemaPath: no resolver of our own. Both are given resolver handlers that refuse every URI, so a
`$ref` to another document (`https://…`, `file:///etc/passwd`, `other.yaml`) is never fetched or read: a learned
document must be self-contained, and one that is not is refused with the reference it names. A document is refused
before validation when it is not a mapping, names no `openapi`/`swagger` version, or holds more than MAX_OPERATIONS
operations (validation costs about 3 ms an operation).

Each operation becomes an `Operation`: its tool name (`NAME__OPERATION`, tools/mcp/naming.py: sanitised, at most 64
characters, a short hash when cut or when two names collide after sanitising), its method, path and server, its
parameters as one JSON schema for the model (tools/learned/schemas.py), and which security schemes it needs.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import yaml

from sunwell.tools.learned.schemas import AUTH_HEADERS, tool_parameters
from sunwell.tools.mcp.naming import tool_name

if TYPE_CHECKING:
    from jsonschema_path import SchemaPath

MAX_OPERATIONS = 10_000
MAX_DESCRIPTION = 400
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
API_NAME = re.compile(r"[a-z][a-z0-9-]{0,29}")


class NotAnApi(Exception):
    """A document Sunwell does not learn from; the message is one line saying why."""


@dataclass(frozen=True)
class Param:
    name: str
    location: str
    """`path`, `query` or `header` (cookies and auth headers are never the model's)."""
    key: str
    """The argument that carries it (the name, or `name_in` when two locations share a name)."""


@dataclass(frozen=True)
class Operation:
    tool: str
    method: str
    """Upper case."""
    path: str
    server: str
    """The base URL the path is appended to."""
    summary: str
    description: str
    tags: tuple[str, ...]
    params: tuple[Param, ...]
    body: str | None
    """The content type a JSON body is sent as (the `body` argument), None: no body."""
    schema: dict[str, Any]
    security: tuple[tuple[str, ...], ...]
    """Alternatives, each the schemes sent together; () needs none."""

    def wire(self) -> dict[str, Any]:
        return {**asdict(self), "params": [asdict(p) for p in self.params]}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Operation:
        return cls(**{**data, "tags": tuple(data["tags"]), "params": tuple(Param(**p) for p in data["params"]),
                      "security": tuple(tuple(s) for s in data["security"])})


@dataclass(frozen=True)
class Scheme:
    name: str
    kind: str
    """`apiKey`, `http` (bearer, basic), `oauth2` (client credentials)."""
    location: str = ""
    """For an API key: `header` or `query`; for http: the scheme (`bearer`, `basic`)."""
    param: str = ""
    """An API key's header or query name."""
    token_url: str = ""
    """OAuth2 client credentials: where the token is asked."""


@dataclass
class Api:
    title: str
    version: str
    operations: list[Operation]
    schemes: list[Scheme]
    problems: list[str] = field(default_factory=list)
    """Operations left out and why (a body that is not JSON, a scheme Sunwell cannot send)."""

    @property
    def servers(self) -> list[str]:
        return list(dict.fromkeys(op.server for op in self.operations))


def parse_text(text: str) -> dict[str, Any]:
    """A document's text (JSON or YAML) as a mapping, or NotAnApi."""
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.load(text, Loader=_NoAliases)
    except (ValueError, yaml.YAMLError) as exc:
        raise NotAnApi(f"it is neither JSON nor YAML ({str(exc).splitlines()[0][:200]})") from None
    if not isinstance(data, dict):
        raise NotAnApi("it is not an OpenAPI document (not a mapping of keys)")
    return data


class _NoAliases(yaml.SafeLoader):
    """YAML without aliases: `*a` repeated in nine lists of nine is a billion nodes for whoever walks it."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise NotAnApi("it uses YAML aliases (*name), which Sunwell does not expand")
        return super().compose_node(parent, index)


def read_api(data: dict[str, Any], name: str, source_url: str | None = None) -> Api:
    """The operations of the document `data`, validated; `source_url` (where it came from) resolves relative server
    URLs. Raises NotAnApi."""
    if not isinstance(data.get("openapi", data.get("swagger")), str):
        raise NotAnApi("it is not an OpenAPI document: no `openapi` or `swagger` version")
    paths = data.get("paths")
    count = sum(1 for item in paths.values() if isinstance(item, dict) for key in item if key in METHODS) \
        if isinstance(paths, dict) else 0
    if count > MAX_OPERATIONS:
        raise NotAnApi(f"it has {count:,} operations, more than {MAX_OPERATIONS:,}")
    # imported here: a quarter of a second, paid only when a document is read (never at the sidecar's start)
    from jsonschema_path import SchemaPath
    from openapi_spec_validator.shortcuts import get_validator_cls
    from openapi_spec_validator.validation.exceptions import ValidatorDetectError

    try:
        validator = get_validator_cls(data)
    except (ValidatorDetectError, KeyError):
        raise NotAnApi(f"OpenAPI version {data.get('openapi', data.get('swagger'))!r} is not one Sunwell reads "
                       "(Swagger 2.0, OpenAPI 3.0, 3.1)") from None
    root = SchemaPath.from_dict(data, handlers=NO_REMOTE, resolved_cache_maxsize=256)
    try:
        validator(root).validate()
    except Exception as exc:  # noqa: BLE001 - the library's errors (ValidationError, Unresolvable, ...): one line
        raise NotAnApi(f"it is not a valid OpenAPI document: {_first_line(exc)}") from None
    return _Reader(data, root, name, source_url).read()


def _refuse(uri: str) -> Any:
    raise NotAnApi(f"it refers to another document ({uri[:200]}), which is not fetched: learn a bundled document")


NO_REMOTE = {"<all_urls>": _refuse, "http": _refuse, "https": _refuse, "file": _refuse}


def _first_line(exc: Exception) -> str:
    from referencing.exceptions import Unresolvable

    if isinstance(exc, Unresolvable):
        return (f"it refers to another document ({str(exc)[:200]}), which is not read: learn a bundled, "
                "self-contained document")
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]


class _Reader:
    def __init__(self, data: dict[str, Any], root: SchemaPath, name: str, source_url: str | None) -> None:
        self.data, self.root, self.name, self.source = data, root, name, source_url
        self.v2 = "swagger" in data
        self.taken: set[str] = set()
        self.problems: list[str] = []

    def read(self) -> Api:
        schemes = self._schemes()
        known = {scheme.name for scheme in schemes}
        default_security = self.data.get("security") or []
        operations: list[Operation] = []
        paths = self.root / "paths"
        for path in paths.keys():  # noqa: SIM118 - a SchemaPath, not a dict
            item = paths / path
            shared = list(item / "parameters") if "parameters" in item else []
            for method in (m for m in METHODS if m in item):
                op = item / method
                raw = op.read_value()
                servers = raw.get("servers") or item.read_value().get("servers") or None
                operation = self._operation(path, method, op, raw, shared, servers,
                                            raw.get("security", default_security), known)
                if operation is not None:
                    operations.append(operation)
        info = self.data.get("info") or {}
        return Api(str(info.get("title", self.name)), str(info.get("version", "")), operations, schemes,
                   self.problems)

    def _operation(self, path: str, method: str, op: SchemaPath, raw: dict[str, Any], shared: list[SchemaPath],
                   servers: list[dict[str, Any]] | None, security: list[dict[str, Any]],
                   known: set[str]) -> Operation | None:
        where = f"{method.upper()} {path}"
        own = list(op / "parameters") if "parameters" in op else []
        by_place: dict[tuple[str, str], SchemaPath] = {}
        for param in [*shared, *own]:  # the operation's own override the path's, by name and location
            value = param.read_value()
            by_place[(str(value.get("name")), str(value.get("in")))] = param

        schema, params, body = tool_parameters(by_place, op, self.v2, self._auth_names())
        if body == "unsupported":
            self.problems.append(f"{where}: its request body is not JSON; left out")
            return None
        alternatives = tuple(tuple(requirement) for requirement in security if isinstance(requirement, dict))
        if any(name not in known for alternative in alternatives for name in alternative):
            self.problems.append(f"{where}: it needs a security scheme Sunwell cannot send; left out")
            return None
        label = raw.get("operationId") or f"{method}_{path}"
        tool = tool_name(self.name, re.sub(r"_+", "_", re.sub(r"[^a-zA-Z0-9_-]", "_", str(label))).strip("_"),
                         self.taken)
        self.taken.add(tool)
        summary = _one_line(raw.get("summary") or "")
        description = _clip(raw.get("description") or "")
        return Operation(tool=tool, method=method.upper(), path=path, server=self._server(servers),
                         summary=summary, description=description, tags=tuple(map(str, raw.get("tags") or ())),
                         params=tuple(Param(*param) for param in params), body=body, schema=schema, security=alternatives)

    def _server(self, servers: list[dict[str, Any]] | None) -> str:
        if self.v2:
            scheme = (self.data.get("schemes") or ["https"])[0]
            host = self.data.get("host")
            base = self.data.get("basePath") or ""
            url = f"{scheme}://{host}{base}" if host else base
        else:
            first = (servers or self.data.get("servers") or [{"url": "/"}])[0]
            url = str(first.get("url", "/"))
            for variable, spec in (first.get("variables") or {}).items():
                url = url.replace("{" + variable + "}", str(spec.get("default", "")))
        if "://" not in url:
            if self.source is None:
                raise NotAnApi(f"its server URL {url!r} is relative, and a file has no host to be relative to")
            url = urljoin(self.source, url)
        return url.rstrip("/")

    def _schemes(self) -> list[Scheme]:
        if self.v2:
            found = self.data.get("securityDefinitions") or {}
        else:
            found = (self.root / "components" / "securitySchemes").read_value() \
                if "securitySchemes" in (self.data.get("components") or {}) else {}
        schemes = []
        for name, spec in found.items():
            spec = spec if "$ref" not in spec else (self.root / "components" / "securitySchemes" / name).read_value()
            kind = spec.get("type")
            if kind == "apiKey" and spec.get("in") in ("header", "query"):
                schemes.append(Scheme(name, "apiKey", spec["in"], str(spec.get("name", ""))))
            elif kind == "http" and str(spec.get("scheme", "")).lower() in ("bearer", "basic"):
                schemes.append(Scheme(name, "http", str(spec["scheme"]).lower()))
            elif kind == "basic":  # Swagger 2.0
                schemes.append(Scheme(name, "http", "basic"))
            elif kind == "oauth2" and (url := _client_credentials_url(spec)):
                schemes.append(Scheme(name, "oauth2", token_url=url))
        return schemes

    def _auth_names(self) -> set[tuple[str, str]]:
        found = {(name, "header") for name in AUTH_HEADERS}
        for scheme in self._schemes_cache():
            if scheme.kind == "apiKey":
                found.add((scheme.param.lower(), scheme.location))
        return found

    def _schemes_cache(self) -> list[Scheme]:
        if not hasattr(self, "_cached"):
            self._cached = self._schemes()
        return self._cached


def _client_credentials_url(spec: dict[str, Any]) -> str:
    if spec.get("flow") == "application":  # Swagger 2.0
        return str(spec.get("tokenUrl", ""))
    flow = (spec.get("flows") or {}).get("clientCredentials") or {}
    return str(flow.get("tokenUrl", ""))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:200]


def _clip(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 1] + "…"
