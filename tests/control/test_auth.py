"""Bearer token: required on every route but /healthz when the app has a token."""

from __future__ import annotations

import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Fabric
from tests.control.conftest import API, TestClient, observe

TOKEN = "s3cret"
GOOD = {"Authorization": f"Bearer {TOKEN}"}
#: RFC 9110 §11.1: the scheme is case-insensitive.
GOOD_SPELLINGS = ["Bearer", "bearer", "BEARER", "bEaReR"]
BAD_HEADERS = {
    "none": {},
    "wrong-token": {"Authorization": "Bearer guess"},
    "no-scheme": {"Authorization": TOKEN},
    "basic-scheme": {"Authorization": f"Basic {TOKEN}"},
    "token-prefix": {"Authorization": "Bearer s3cre"},
    "token-extended": {"Authorization": f"Bearer {TOKEN}x"},
    "token-other-case": {"Authorization": f"Bearer {TOKEN.upper()}"},
    "scheme-glued": {"Authorization": f"Bearer{TOKEN}"},
    "empty": {"Authorization": ""},
}
ROUTES = [
    ("GET", f"{API}/topology"),
    ("GET", f"{API}/events"),
    ("GET", "/openapi.json"),
    ("GET", "/metrics"),
    ("POST", f"{API}/operations"),
    ("POST", f"{API}/clock/advance"),
]
BODIES = {
    f"{API}/operations": {"kind": "user-reboot", "target": "web-0"},
    f"{API}/clock/advance": {"seconds": 900},
}


@pytest.fixture
def secured(fabric: Fabric) -> TestClient:
    return TestClient(ControlApp(fabric, token=TOKEN).asgi)


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("headers", list(BAD_HEADERS.values()), ids=list(BAD_HEADERS))
def test_requests_without_the_right_token_are_401_and_change_nothing(
    secured: TestClient, fabric: Fabric, method: str, path: str, headers: dict[str, str]
) -> None:
    before = observe(fabric)
    response = secured.request(method, path, headers=headers, json=BODIES.get(path))
    assert response.status_code == 401
    assert response.json() == {"error": "missing or wrong Authorization: Bearer token"}
    assert response.headers["www-authenticate"] == "Bearer"
    assert observe(fabric) == before


@pytest.mark.parametrize("scheme", GOOD_SPELLINGS)
@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_requests_with_the_right_token_are_served(
    secured: TestClient, method: str, path: str, scheme: str
) -> None:
    headers = {"Authorization": f"{scheme} {TOKEN}"}
    response = secured.request(method, path, headers=headers, json=BODIES.get(path))
    assert response.status_code in (200, 201), response.text


def test_healthz_needs_no_token(secured: TestClient) -> None:
    assert secured.get("/healthz").status_code == 200
    assert secured.get("/healthz", headers={"Authorization": "Bearer guess"}).status_code == 200


def test_without_a_token_configured_no_header_is_needed(client: TestClient) -> None:
    assert client.get(f"{API}/topology").status_code == 200
