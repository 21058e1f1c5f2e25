"""``/openapi.json``: an OpenAPI 3.1 document that describes exactly what the app serves."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.routing import Route

from forewarn import __version__
from forewarn.control import ControlApp
from forewarn.fabric import Fabric

from .conftest import TestClient

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
        paths = (
            [route.path.replace("{action}", a) for a in ACTIONS]
            if "{action}" in route.path
            else [route.path]
        )
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
    }
    assert body.get("additionalProperties") is False
    post = document["paths"]["/api/v1/operations"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/OperationBody"
    }


def test_every_documented_route_is_served(app: ControlApp, document: dict[str, Any]) -> None:
    assert documented(document) <= served(app)


def test_every_served_route_is_documented(app: ControlApp, document: dict[str, Any]) -> None:
    assert served(app) == documented(document)
