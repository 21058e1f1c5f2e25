"""The dashboard page at ``/``: served to browsers, JSON to everyone else, under the same
rules as the control API (its own Host only, no cross-site changes, the token for data)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Fabric
from tests.control.conftest import JSON, TestClient, reported_app
from tests.support.fabrics import make_fabric
from tests.support.liveserver import live_server, raw_request

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
TOKEN = "s3cret-token"


@pytest.fixture
def fabric() -> Fabric:
    return make_fabric()


@pytest.fixture
def secured() -> TestClient:
    return TestClient(reported_app(token=TOKEN).asgi)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value is not None:
                self.links.append(value)


def test_a_browser_gets_the_page_everyone_else_the_json_index(fabric: Fabric) -> None:
    client = TestClient(ControlApp(fabric).asgi)
    page = client.get("/", headers={"Accept": BROWSER})
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "<title>forewarn dashboard</title>" in page.text
    assert page.headers["vary"] == "Accept, Accept-Encoding"  # the page is gzipped
    for accept in ("application/json", "*/*", "application/json, text/html;q=0.5", None):
        headers = {"Accept": accept} if accept is not None else {}
        response = client.get("/", headers=headers)
        assert response.headers["content-type"] == "application/json", accept
        assert response.json()["api"] == "/api/v1"
        assert response.headers["vary"] == "Accept"


def test_the_page_loads_nothing_from_elsewhere_and_cannot_be_framed(fabric: Fabric) -> None:
    client = TestClient(ControlApp(fabric).asgi)
    page = client.get("/", headers={"Accept": BROWSER})
    policy = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    assert "script-src 'self'" in policy
    assert page.headers["x-frame-options"] == "DENY"
    parser = _Links()
    parser.feed(page.text)
    assert parser.links, "the page links its script and style"
    for link in parser.links:
        assert link.startswith("/dashboard/") or link == "data:,", link
        if link.startswith("/dashboard/"):
            assert client.get(link).status_code == 200, link
    assert "<script>" not in page.text  # no inline script: the policy would refuse it
    assert not re.search(r"\son[a-z]+=", page.text)  # no inline event handlers either


@pytest.mark.parametrize(
    ("name", "media"),
    [
        ("app.js", "text/javascript; charset=utf-8"),
        ("fleet.js", "text/javascript; charset=utf-8"),
        ("fleet_vms.js", "text/javascript; charset=utf-8"),
        ("events.js", "text/javascript; charset=utf-8"),
        ("targets.js", "text/javascript; charset=utf-8"),
        ("history.js", "text/javascript; charset=utf-8"),
        ("verdict_vms.js", "text/javascript; charset=utf-8"),
        ("verdicts.js", "text/javascript; charset=utf-8"),
        ("faults.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
    ],
)
def test_the_page_s_files_are_served_with_their_type(fabric: Fabric, name: str, media: str) -> None:
    response = TestClient(ControlApp(fabric).asgi).get(f"/dashboard/{name}")
    assert response.status_code == 200
    assert response.headers["content-type"] == media
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path", ["/dashboard/nope.js", "/dashboard/..%2F__init__.py", "/dashboard/.hidden.css",
             "/dashboard/hub.py", "/dashboard/"],
)  # fmt: skip
def test_nothing_but_the_page_s_files_is_served(fabric: Fabric, path: str) -> None:
    response = TestClient(ControlApp(fabric).asgi).get(path)
    assert response.status_code == 404
    assert list(response.json()) == ["error"]


def test_with_a_token_the_page_is_public_and_its_data_is_not(secured: TestClient) -> None:
    assert secured.get("/", headers={"Accept": BROWSER}).status_code == 200
    assert secured.get("/dashboard/app.js").status_code == 200
    assert secured.get("/", headers={"Accept": "application/json"}).status_code == 401
    for path in ("/api/v1/dashboard", "/api/v1/reactions", "/api/v1/report", "/api/v1/stream"):
        response = secured.get(path)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/api/v1/dashboard", "/api/v1/reactions", "/api/v1/report"):
        assert secured.get(path, headers=bearer).status_code == 200, path
    assert secured.post("/api/v1/clock/advance", headers=JSON, json={"seconds": 1}).status_code == (
        401
    )


def test_the_page_answers_only_to_its_own_host(fabric: Fabric) -> None:
    """DNS rebinding: a page of evil.example, resolved to 127.0.0.1, gets nothing."""
    with live_server(ControlApp(fabric)) as port:
        for path in ("/", "/dashboard/app.js", "/api/v1/stream", "/api/v1/dashboard"):
            headers = [("Host", f"evil.example:{port}"), ("Accept", BROWSER)]
            response = raw_request(port, "GET", path, headers)
            assert response.status_code == 421, path
        ok = raw_request(port, "GET", "/", [("Host", f"localhost:{port}"), ("Accept", BROWSER)])
        assert ok.status_code == 200


def test_a_page_of_another_site_cannot_press_the_buttons(fabric: Fabric) -> None:
    """What the dashboard's buttons send, sent by another origin: refused, nothing done."""
    with live_server(ControlApp(fabric)) as port:
        before = len(fabric.operations())
        body = b'{"kind":"user-reboot","target":"web-0"}'
        for origin, content_type, status in [
            ("http://evil.example", "application/json", 403),
            ("null", "application/json", 403),
            (f"http://127.0.0.1:{port}", "text/plain", 415),  # a form or simple request
        ]:
            headers = [("Host", f"127.0.0.1:{port}"), ("Origin", origin),
                       ("Content-Type", content_type)]  # fmt: skip
            response = raw_request(port, "POST", "/api/v1/operations", headers, body)
            assert response.status_code == status, origin
        assert len(fabric.operations()) == before
        headers = [("Host", f"127.0.0.1:{port}"), ("Origin", f"http://127.0.0.1:{port}"),
                   ("Content-Type", "application/json")]  # fmt: skip
        assert raw_request(port, "POST", "/api/v1/operations", headers, body).status_code == 201


def test_the_snapshot_is_everything_the_page_draws(fabric: Fabric) -> None:
    client = TestClient(ControlApp(fabric).asgi)
    body = {"kind": "host-update", "target": "host-1"}
    created = client.post("/api/v1/operations", headers=JSON, json=body)
    assert created.status_code == 201
    snapshot: dict[str, Any] = client.get("/api/v1/dashboard").json()
    assert snapshot["vms"] == len(fabric.topology.vms)  # counted: the VMs come per scope
    assert "scopes" not in snapshot  # a row per kind: the scopes come per kind
    sets = next(k for k in snapshot["kinds"] if k["kind"] == "availability_set")
    (web,) = sets.pop("worst")
    assert sets == {"region": "westeurope", "kind": "availability_set", "scopes": 1, "vms": 6,
                    "states": {}, "polled": 0, "silent": 0, "events": 1}  # fmt: skip
    assert web == {"id": "web", "region": "westeurope", "kind": "availability_set",
                   "update_domains": 3, "incarnation": web["incarnation"], "enabled": True,
                   "vms": 6, "states": {}, "polled": 0, "silent": 0}  # fmt: skip
    page = client.get("/api/v1/dashboard/scopes/web").json()
    web0 = next(v for v in page["vms"] if v["name"] == "web-0")
    assert web0 == {"name": "web-0", "scope": "web", "host": "host-1", "ud": 0,
                    "status": "running", "polled": None}  # fmt: skip
    assert {e["id"] for e in snapshot["events"]} == {e.id for e in fabric.events()}
    assert [o["id"] for o in snapshot["operations"]] == [created.json()["id"]]
    kinds = [h["kind"] for h in snapshot["history"]]
    assert kinds[:2] == ["operation.created", "event.scheduled"]
    assert {c["kind"] for c in snapshot["catalogue"]} >= {"user-reboot", "host-update"}
    assert next(c for c in snapshot["catalogue"] if c["kind"] == "host-update")["targets"] == [
        "vm", "host", "scope",
    ]  # fmt: skip
    assert snapshot["virtual"] is True and snapshot["leading"] is True
