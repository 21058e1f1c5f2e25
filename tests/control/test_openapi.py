"""``/openapi.json``: an OpenAPI 3.1 document that describes exactly what the app serves."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.routing import Route

from forewarn import __version__
from forewarn.contract import SUPPORTED_VERSIONS
from forewarn.control import ControlApp
from forewarn.fabric import Fabric, OperationKind
from tests.control.conftest import TestClient

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
ACTIONS = ("approve", "start", "cancel", "complete")


@pytest.fixture
def app(fabric: Fabric) -> ControlApp:
    return ControlApp(fabric)


@pytest.fixture
def document(app: ControlApp) -> dict[str, Any]:
    response = TestClient(app.asgi).get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    doc: dict[str, Any] = response.json()
    return doc


def served(app: ControlApp) -> set[tuple[str, str]]:
    """(path, method) of every Starlette route, ``{action}`` expanded, HEAD left out."""
    out = set()
    for route in app.asgi.routes:
        assert isinstance(route, Route)
        path = route.path.replace(":path}", "}")  # a scope id's "/" is in its parameter
        paths = [path.replace("{action}", a) for a in ACTIONS] if "{action}" in path else [path]
        out |= {(p, m.lower()) for p in paths for m in route.methods or () if m != "HEAD"}
    return out


def documented(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {(p, m) for p, item in doc["paths"].items() for m in item if m in HTTP_METHODS}


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            yield path, method, op


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def test_document_has_the_openapi_3_1_shape(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1.")
    assert document["info"]["title"] == "forewarn control API"
    assert document["info"]["version"] == __version__
    assert document["paths"]
    assert all(path.startswith("/") for path in document["paths"])
    for path, method, op in operations(document):
        assert method in HTTP_METHODS, (path, method)
        assert op["summary"]
        assert op["responses"], (path, method)
        for code, response in op["responses"].items():
            assert re.fullmatch(r"[1-5](\d\d|XX)", code), (path, code)
            assert response["description"]


def test_every_path_template_parameter_is_declared(document: dict[str, Any]) -> None:
    for path, method, op in operations(document):
        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert declared == set(re.findall(r"{(\w+)}", path)), (path, method)
        for param in op.get("parameters", []):
            assert param["in"] in {"path", "query", "header", "cookie"}
            assert param["required"] is True or param["in"] != "path"


def test_every_reference_resolves_to_a_component(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    found = set(refs(document))
    assert found
    for ref in found:
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.rsplit("/", 1)[1] in schemas, ref


def test_components_describe_the_operation_body(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert {"OperationBody", "AdvanceBody", "ErrorOut", "EventOut", "OperationOut"} <= set(schemas)
    body = schemas["OperationBody"]
    assert body["type"] == "object"
    assert body["required"] == ["kind"]
    assert set(body["properties"]) == {
        "kind",
        "vms",
        "host",
        "scope",
        "target",
        "notice_seconds",
        "description",
        "duration_seconds",
        "region",
        "wave_hosts",
    }
    assert body["properties"]["wave_hosts"]["anyOf"][0] == {
        "type": "integer", "minimum": 1, "maximum": 10_000,
    }  # fmt: skip
    assert body.get("additionalProperties") is False
    post = document["paths"]["/api/v1/operations"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/OperationBody"
    }


def test_every_documented_route_is_served(app: ControlApp, document: dict[str, Any]) -> None:
    assert documented(document) <= served(app)


def test_every_served_route_is_documented(app: ControlApp, document: dict[str, Any]) -> None:
    assert served(app) == documented(document)


# ------------------------------------------------------------------ what the server enforces


def parameter(doc: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    params = doc["paths"][path]["get"]["parameters"]
    found: dict[str, Any] = next(p for p in params if p["name"] == name)
    return found


def test_every_405_allows_exactly_the_documented_methods(
    client: TestClient, document: dict[str, Any]
) -> None:
    for path, item in document["paths"].items():
        methods = {m.upper() for m in item if m in HTTP_METHODS}
        if "GET" in methods:
            methods.add("HEAD")
        url = path.replace("{event_id}", "X").replace("{operation_id}", "X").replace("{vm}", "x")
        response = client.request("PATCH", url, headers={"Content-Type": "application/json"})
        assert response.status_code == 405, path
        assert response.headers["allow"] == ", ".join(sorted(methods)), path


@pytest.mark.parametrize("name", ["limit", "last"])
def test_history_documents_limit_and_last_with_the_servers_bounds(
    client: TestClient, document: dict[str, Any], name: str
) -> None:
    schema = parameter(document, "/api/v1/history", name)["schema"]
    assert (schema["type"], schema["minimum"], schema["maximum"]) == ("integer", 0, 10_000)
    for value, status in [(0, 200), (10_000, 200), (10_001, 400), (-1, 400)]:
        response = client.get("/api/v1/history", params={name: value})
        assert response.status_code == status, (name, value)


def test_kind_is_an_enum_of_exactly_the_operations_the_server_knows(
    client: TestClient, document: dict[str, Any]
) -> None:
    kinds = document["components"]["schemas"]["OperationBody"]["properties"]["kind"]["enum"]
    assert kinds == [k.value for k in OperationKind]
    for kind in kinds:  # each is known (it may still not apply to jumpbox)
        response = client.post("/api/v1/operations", json={"kind": kind, "target": "jumpbox"})
        assert "unknown operation" not in response.text, kind
    response = client.post("/api/v1/operations", json={"kind": "reboot", "target": "jumpbox"})
    assert "unknown operation" in response.json()["error"]


TARGETS = {"target": "web-0", "vms": ["web-0"], "host": "host-1", "scope": "web", "region": True}


def test_operation_body_needs_exactly_one_target(
    client: TestClient, document: dict[str, Any]
) -> None:
    """The schema's ``oneOf`` and the server agree on every combination of targets."""
    body = document["components"]["schemas"]["OperationBody"]
    branches = body["oneOf"]
    assert sorted(b["required"][0] for b in branches) == sorted(TARGETS)
    for count in range(len(TARGETS) + 1):
        for names in itertools.combinations(TARGETS, count):
            given = {name: TARGETS[name] for name in names}
            valid = sum(all(k in given for k in b["required"]) for b in branches) == 1
            response = client.post("/api/v1/operations", json={"kind": "platform-reboot", **given})
            assert (response.status_code < 300) == valid, (names, response.text)
            if response.status_code < 300:
                client.post(f"/api/v1/events/{response.json()['event_ids'][0]}/cancel", json={})


def test_documents_take_an_enum_of_api_versions(
    client: TestClient, document: dict[str, Any]
) -> None:
    schema = parameter(document, "/api/v1/documents/{vm}", "api-version")["schema"]
    assert schema["enum"] == list(SUPPORTED_VERSIONS)
    for version in schema["enum"]:
        response = client.get("/api/v1/documents/web-0", params={"api-version": version})
        assert response.status_code == 200, version
    assert (
        client.get("/api/v1/documents/web-0", params={"api-version": "latest"}).status_code == 400
    )


def test_a_token_is_applied_to_every_operation_but_healthz(fabric: Fabric) -> None:
    secured = TestClient(ControlApp(fabric, token="t").asgi)
    doc = secured.get("/openapi.json", headers={"Authorization": "Bearer t"}).json()
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path, method, op in operations(doc):
        url = path.replace("{event_id}", "X").replace("{operation_id}", "X").replace("{vm}", "x")
        url = url.replace("{name}", "app.js")  # the dashboard's files: public, like healthz
        response = secured.request(method, url, headers={"Content-Type": "application/json"})
        if path in ("/healthz", "/dashboard/{name}"):
            assert op["security"] == []
            assert response.status_code == 200
        else:
            assert op["security"] == [{"bearer": []}], path
            assert "401" in op["responses"], path
            assert response.status_code == 401, path


def test_without_a_token_no_operation_asks_for_one(document: dict[str, Any]) -> None:
    assert all(op["security"] == [] for _, _, op in operations(document))
    assert "bearer" in document["components"]["securitySchemes"]


def test_every_api_operation_documents_the_errors_it_can_answer(document: dict[str, Any]) -> None:
    for path, method, op in operations(document):
        codes = set(op["responses"])
        assert "4XX" in codes, path
        if path.startswith("/api/"):
            assert "503" in codes, path  # store unavailable, or no leader yet
        if method == "post":
            assert "415" in codes, path
            assert op["requestBody"]["required"] is True, path
