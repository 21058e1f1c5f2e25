"""A web page the user happens to open must not drive the control API (issue 6 §1).

Cross-site forms and ``fetch`` send ``text/plain``, form or multipart bodies (or none)
without a CORS preflight, always with a cross-site ``Origin``; DNS rebinding sends the
attacker's name as ``Host``. Each is tried for real, as raw bytes on a real socket where
the headers matter, and must be refused with a JSON error and change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Fabric
from tests.control.conftest import API, JSON, TestClient, create, observe
from tests.support.liveserver import live_server, raw_request

OPS = f"{API}/operations"
ADVANCE = f"{API}/clock/advance"
REBOOT = b'{"kind":"user-reboot","target":"web-0"}'


@pytest.fixture
def port(fabric: Fabric) -> Iterator[int]:
    """The demo fleet's control API on a real loopback socket."""
    with live_server(ControlApp(fabric)) as bound:
        yield bound


@pytest.fixture
def event_id(client: TestClient) -> str:
    event: str = create(client, kind="user-reboot", target="web-1")["event_ids"][0]
    return event


def state_changing(event_id: str) -> list[tuple[str, bytes]]:
    return [
        (OPS, REBOOT),
        (ADVANCE, b'{"seconds": 60}'),
        (f"{API}/events/{event_id}/approve", b""),
        (f"{API}/events/{event_id}/complete", b"{}"),
    ]


# ------------------------------------------------------------------ Content-Type

NOT_JSON = {
    "none": None,
    "text-plain": "text/plain",
    "text-plain-charset": "text/plain;charset=UTF-8",
    "form": "application/x-www-form-urlencoded",
    "multipart": "multipart/form-data; boundary=xyz",
    "text-json": "text/json",
    "json-suffix": "application/jsonp",
}


@pytest.mark.parametrize("content_type", list(NOT_JSON.values()), ids=list(NOT_JSON))
def test_state_changing_requests_that_are_not_json_are_415_and_change_nothing(
    fabric: Fabric, client: TestClient, event_id: str, content_type: str | None
) -> None:
    before = observe(fabric)
    for path, body in state_changing(event_id):
        headers = {"Content-Type": content_type} if content_type else {}
        response = client.post(path, content=body, headers=headers)
        assert response.status_code == 415, (path, response.text)
        assert response.headers["content-type"] == "application/json"
        assert "Content-Type: application/json" in response.json()["error"]
    assert observe(fabric) == before


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
)
def test_json_in_any_spelling_is_served(
    fabric: Fabric, client: TestClient, event_id: str, content_type: str
) -> None:
    start = fabric.clock.now()
    for path, body in state_changing(event_id):
        response = client.post(path, content=body, headers={"Content-Type": content_type})
        assert response.status_code in (200, 201), (path, response.text)
    assert fabric.clock.now() == start + 60
    assert event_id not in {e.id for e in fabric.events()}  # approved, started, completed


def test_an_event_action_takes_no_body_or_an_empty_object_only(
    fabric: Fabric, client: TestClient, event_id: str
) -> None:
    before = observe(fabric)
    response = client.post(f"{API}/events/{event_id}/approve", json={"force": True})
    assert response.status_code == 400
    assert "unknown field `force`" in response.json()["error"]
    assert observe(fabric) == before
    assert client.post(f"{API}/events/{event_id}/approve", headers=JSON).status_code == 200


def test_a_cross_site_text_plain_post_is_refused_on_the_wire(fabric: Fabric, port: int) -> None:
    """What ``fetch(url, {method: "POST", mode: "no-cors", body})`` sends from another site."""
    before = observe(fabric)
    browser = [
        ("Host", f"127.0.0.1:{port}"),
        ("Origin", "http://evil.example"),
        ("Content-Type", "text/plain;charset=UTF-8"),
        ("Sec-Fetch-Site", "cross-site"),
        ("Sec-Fetch-Mode", "no-cors"),
    ]
    response = raw_request(port, "POST", OPS, browser, REBOOT)
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/json"
    assert "cross-origin" in response.json()["error"]
    # An old browser that sends no Origin is still stopped by the media type.
    response = raw_request(port, "POST", OPS, browser[:1] + browser[2:], REBOOT)
    assert (response.status_code, response.headers["content-type"]) == (415, "application/json")
    form = [("Host", f"127.0.0.1:{port}"), ("Content-Type", "application/x-www-form-urlencoded")]
    response = raw_request(port, "POST", ADVANCE, form, b"seconds=86400")
    assert response.status_code == 415
    assert observe(fabric) == before


# ------------------------------------------------------------------ Host (DNS rebinding)

ALLOWED_ON_LOOPBACK = [
    "127.0.0.1:{port}",
    "127.0.0.1",
    "127.0.0.1:1",
    "127.9.8.7:{port}",
    "localhost:{port}",
    "LOCALHOST",
    "localhost.:8080",
    "[::1]:{port}",
    "[::ffff:127.0.0.1]:{port}",
]
REFUSED = [
    "evil.example:{port}",
    "evil.example",
    "localhost.evil.example:{port}",
    "127.0.0.1.nip.io:{port}",
    "10.0.0.1:{port}",
    "0.0.0.0:{port}",
    "",
    "127.0.0.1:{port}:1",
    "127.0.0.1:99999",
    "user@127.0.0.1:{port}",
    "[::1",
]


@pytest.mark.parametrize("host", ALLOWED_ON_LOOPBACK)
def test_loopback_names_with_any_port_are_the_listeners_own(port: int, host: str) -> None:
    response = raw_request(port, "GET", f"{API}/clock", [("Host", host.format(port=port))])
    assert response.status_code == 200, response.body


@pytest.mark.parametrize("host", REFUSED)
def test_any_other_host_is_refused_with_421(fabric: Fabric, port: int, host: str) -> None:
    before = observe(fabric)
    for method, path, body in [("GET", f"{API}/topology", b""), ("POST", OPS, REBOOT)]:
        headers = [("Host", host.format(port=port)), ("Content-Type", "application/json")]
        response = raw_request(port, method, path, headers, body)
        assert response.status_code == 421, (host, response.body)
        assert response.headers["content-type"] == "application/json"
        assert "--control-host" in response.json()["error"]
    assert observe(fabric) == before


def test_a_dns_rebinding_read_gets_nothing(port: int) -> None:
    """evil.example resolved to 127.0.0.1: the page's requests carry its own name."""
    for path in ("/", f"{API}/topology", f"{API}/events", "/openapi.json", "/metrics", "/healthz"):
        response = raw_request(port, "GET", path, [("Host", f"evil.example:{port}")])
        assert response.status_code == 421, path
        assert list(response.json()) == ["error"]


def test_two_host_headers_are_refused(port: int) -> None:
    headers = [("Host", f"127.0.0.1:{port}"), ("Host", "evil.example")]
    response = raw_request(port, "GET", f"{API}/topology", headers)
    assert response.status_code in (400, 421)


def test_an_ipv6_loopback_listener_knows_its_names(fabric: Fabric) -> None:
    with live_server(ControlApp(fabric), host="::1") as port:
        for host, status in [
            (f"[::1]:{port}", 200),
            ("localhost", 200),
            (f"127.0.0.1:{port}", 200),
            (f"evil.example:{port}", 421),
        ]:
            response = raw_request(port, "GET", f"{API}/clock", [("Host", host)], host="::1")
            assert response.status_code == status, host


def test_configured_names_are_served_on_their_port(fabric: Fabric) -> None:
    app = ControlApp(fabric, hosts=["forewarn.test", "Proxy.Example:8443", "192.0.2.7"])
    with live_server(app) as port:
        for host, status in [
            ("forewarn.test", 200),
            (f"FOREWARN.TEST:{port}", 200),
            ("proxy.example:8443", 200),
            ("proxy.example", 421),
            ("proxy.example:8444", 421),
            ("192.0.2.7:1", 200),
            ("sub.forewarn.test", 421),
        ]:
            response = raw_request(port, "GET", f"{API}/clock", [("Host", host)])
            assert response.status_code == status, host


def test_off_loopback_only_the_listeners_own_address_counts(fabric: Fabric) -> None:
    """In process, the listener's address is ``testserver:80``, which is not loopback."""
    client = TestClient(ControlApp(fabric).asgi, base_url="http://testserver")
    assert client.get(f"{API}/clock").status_code == 200
    for host in ("localhost", "127.0.0.1", "testserver:8080", "evil.example"):
        response = client.get(f"{API}/clock", headers={"Host": host})
        assert response.status_code == 421, host


# ------------------------------------------------------------------ Origin


def test_same_origin_pages_may_use_the_api(fabric: Fabric, port: int) -> None:
    own = [("Host", f"127.0.0.1:{port}"), ("Origin", f"http://127.0.0.1:{port}")]
    response = raw_request(port, "POST", OPS, [*own, ("Content-Type", "application/json")], REBOOT)
    assert response.status_code == 201, response.body
    local = [("Host", f"localhost:{port}"), ("Origin", f"http://localhost:{port}")]
    assert raw_request(port, "GET", f"{API}/events", local).status_code == 200


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "https://evil.example:{port}",
        "http://localhost:3000",
        "http://127.0.0.1:{other}",
        "http://localhost:{port}",
        "null",
        "file://",
        "chrome-extension://abcdef",
        "http://127.0.0.1:{port}/path",
        "not an origin",
    ],
)
def test_cross_origin_requests_are_refused_with_403(fabric: Fabric, port: int, origin: str) -> None:
    before = observe(fabric)
    value = origin.format(port=port, other=port + 1)
    headers = [("Host", f"127.0.0.1:{port}"), ("Origin", value)]
    for method, path, body in [("GET", f"{API}/topology", b""), ("POST", OPS, REBOOT)]:
        response = raw_request(
            port, method, path, [*headers, ("Content-Type", "application/json")], body
        )
        assert response.status_code == 403, (value, response.body)
        assert response.json() == {
            "error": f"cross-origin request refused (Origin {value!r}): the control API serves "
            "only pages of its own origin and of names given with --control-host"
        }
    assert observe(fabric) == before


def test_a_configured_name_may_be_an_origin(fabric: Fabric) -> None:
    with live_server(ControlApp(fabric, hosts=["dash.example"])) as port:
        headers = [("Host", f"127.0.0.1:{port}"), ("Origin", "https://dash.example")]
        assert raw_request(port, "GET", f"{API}/clock", headers).status_code == 200


# ------------------------------------------------------------------ the token still applies


def test_a_token_is_still_required_of_a_same_origin_request(fabric: Fabric) -> None:
    with live_server(ControlApp(fabric, token="s3cret")) as port:
        own: list[tuple[str, Any]] = [("Host", f"127.0.0.1:{port}")]
        response = raw_request(port, "GET", f"{API}/clock", own)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        for scheme in ("Bearer", "bearer", "BEARER"):
            auth = [*own, ("Authorization", f"{scheme} s3cret")]
            assert raw_request(port, "GET", f"{API}/clock", auth).status_code == 200, scheme
        evil = [("Host", "evil.example"), ("Authorization", "Bearer s3cret")]
        assert raw_request(port, "GET", f"{API}/clock", evil).status_code == 421
