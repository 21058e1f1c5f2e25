"""Every answer of the control API is JSON, routing errors and crashes too (issue 6 §4)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Fabric, HistoryEntry
from tests.control.conftest import API, JSON, TestClient, observe
from tests.support.liveserver import live_server, raw_request


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/nope"),
        ("GET", f"{API}/nope"),
        ("GET", "/api/v2/topology"),
        ("GET", f"{API}/events/X/approve/again"),
        ("POST", "/nope"),
        ("DELETE", f"{API}/topology/x"),
    ],
)
def test_unknown_routes_are_a_json_404(client: TestClient, method: str, path: str) -> None:
    response = client.request(method, path, headers=JSON)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "error": f"no such route: {path} (the API is under /api/v1; see /openapi.json)"
    }


@pytest.mark.parametrize(
    ("path", "allow", "wrong"),
    [
        (f"{API}/operations", "GET, HEAD, POST", ["PUT", "DELETE", "PATCH"]),
        (f"{API}/topology", "GET, HEAD", ["POST", "PUT", "DELETE"]),
        (f"{API}/clock/advance", "POST", ["GET", "PUT", "DELETE"]),
        (f"{API}/events/X/approve", "POST", ["GET", "DELETE"]),
        ("/openapi.json", "GET, HEAD", ["POST"]),
    ],
)
def test_a_wrong_method_is_a_json_405_that_lists_every_allowed_method(
    fabric: Fabric, client: TestClient, path: str, allow: str, wrong: list[str]
) -> None:
    before = observe(fabric)
    for method in wrong:
        response = client.request(method, path, json={"kind": "user-reboot", "target": "web-0"})
        assert response.status_code == 405, (method, path)
        assert response.headers["allow"] == allow
        assert response.headers["content-type"] == "application/json"
        assert response.json() == {"error": f"{method} is not allowed on {path}; allowed: {allow}"}
    assert observe(fabric) == before


def test_405_allow_header_on_the_wire(fabric: Fabric) -> None:
    with live_server(ControlApp(fabric)) as port:
        response = raw_request(port, "PUT", f"{API}/operations", [("Host", f"127.0.0.1:{port}")])
    assert (response.status_code, response.headers["allow"]) == (405, "GET, HEAD, POST")
    assert list(response.json()) == ["error"]


@pytest.fixture
def crashing(fabric: Fabric) -> Iterator[Fabric]:
    """A fabric whose history listener fails: every change then crashes the request."""

    def explode(entries: list[HistoryEntry]) -> None:
        raise RuntimeError("listener exploded")

    fabric.on_history(explode)
    yield fabric


def test_a_crash_is_a_json_500_without_details(crashing: Fabric) -> None:
    client = TestClient(ControlApp(crashing).asgi, raise_server_exceptions=False)
    response = client.post(f"{API}/operations", json={"kind": "user-reboot", "target": "web-0"})
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": "internal server error; the server log has the details"}
    assert "exploded" not in response.text


def test_a_crash_on_the_wire_is_json_too(crashing: Fabric) -> None:
    with live_server(ControlApp(crashing)) as port:
        headers = [("Host", f"127.0.0.1:{port}"), ("Content-Type", "application/json")]
        body = b'{"kind":"host-update","target":"host-1"}'
        response = raw_request(port, "POST", f"{API}/operations", headers, body)
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"
    assert list(response.json()) == ["error"]


def test_the_root_says_where_the_api_and_its_documentation_are(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    index = response.json()
    assert index["api"] == API
    assert index["openapi"] == "/openapi.json"
    assert client.get(index["openapi"]).json()["openapi"].startswith("3.1")
    assert client.get(index["health"]).json()["status"] == "ok"
    assert client.get(index["metrics"]).status_code == 200
    assert client.get(f"{index['api']}/topology").status_code == 200


def test_head_of_an_unknown_route_is_404_without_a_body(client: TestClient) -> None:
    response = client.head("/nope")
    assert response.status_code == 404
    assert response.content == b""
