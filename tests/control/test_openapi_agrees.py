"""Where the OpenAPI document and the server disagreed: the stream's event data (an
object, not a string) and the report's number parameters given empty."""

from __future__ import annotations

from typing import Any

import pytest

from forewarn.control import ControlApp
from tests.control.conftest import TestClient, reported_app
from tests.dashboard.sse import Stream
from tests.support.liveserver import live_server


@pytest.fixture
def app() -> ControlApp:
    return reported_app()  # serves the report, whose parameters are checked here


def _stream_schema(app: ControlApp) -> dict[str, Any]:
    doc = TestClient(app.asgi).get("/openapi.json").json()
    content = doc["paths"]["/api/v1/stream"]["get"]["responses"]["200"]["content"]
    schema: dict[str, Any] = content["text/event-stream"]["schema"]
    return schema


def test_the_stream_sends_what_its_schema_says_an_object_per_event(app: ControlApp) -> None:
    schema = _stream_schema(app)
    assert schema["properties"]["data"]["type"] == "object"
    kinds = schema["properties"]["event"]["enum"]
    with live_server(app) as port:
        stream = Stream(f"http://127.0.0.1:{port}/api/v1/stream")
        try:
            snapshot = stream.next("snapshot")
            tick = stream.next("tick")
        finally:
            stream.close()
    assert {"snapshot", "tick"} <= set(kinds)
    assert isinstance(snapshot, dict) and "vms" in snapshot
    assert isinstance(tick, dict) and "now" in tick


@pytest.mark.parametrize("path", ["/api/v1/report", "/api/v1/reactions"])
@pytest.mark.parametrize("query", ["since=", "stale_after=", "since=&stale_after=", "since=%20"])
def test_an_empty_number_parameter_is_400_naming_it(app: ControlApp, path: str, query: str) -> None:
    response = TestClient(app.asgi).get(f"{path}?{query}")
    assert response.status_code == 400
    name = query.split("=")[0]
    assert f"query parameter {name} is empty" in response.json()["error"]
    assert TestClient(app.asgi).get(path).status_code == 200  # left out: the defaults
