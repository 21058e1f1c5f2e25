"""The one client of the control API against a real ``forewarn serve``: every way a call
fails is a ``ControlError`` of its kind whose message is one line saying what to fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from forewarn.controlapi import (
    ControlClient,
    ControlError,
    ControlRefused,
    ControlSettingError,
    ControlUnreachable,
    NotControlApi,
)
from forewarn.testing import Forewarn, ForewarnError
from tests.support.serverproc import ServerProcess, free_port

TOKEN = "s3cret"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    db = tmp_path_factory.mktemp("controlapi") / "forewarn.db"
    args = ["--clock", "virtual", "--enablement", "always", "--control-token", TOKEN]
    process = ServerProcess(db, args).start(timeout=60)
    yield process
    process.stop()


def _one_line(error: ControlError) -> str:
    text = str(error)
    assert text and "\n" not in text
    return text


def test_an_unreachable_server_is_one_line_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with ControlClient(url) as client, pytest.raises(ControlUnreachable) as caught:
        client.clock()
    text = _one_line(caught.value)
    assert text.startswith(f"cannot reach the control API at {url} (")
    assert text.endswith("is `forewarn serve` running?")


def test_without_the_token_the_server_refuses_with_401(server: ServerProcess) -> None:
    for token in (None, "wrong"):
        with (
            ControlClient(server.control_url, token) as client,
            pytest.raises(ControlRefused) as caught,
        ):
            client.events()
        refused = caught.value
        assert (refused.status, refused.method, refused.path) == (401, "GET", "/api/v1/events")
        assert refused.error == "missing or wrong Authorization: Bearer token"
        assert _one_line(refused) == "missing or wrong Authorization: Bearer token (HTTP 401)"
    with ControlClient(server.control_url, TOKEN) as client:
        assert client.events() == []


def test_a_json_error_body_is_surfaced_as_one_line(server: ServerProcess) -> None:
    with ControlClient(server.control_url, TOKEN) as client:
        with pytest.raises(ControlRefused) as caught:
            client.trigger("user-reboot", "no-such-vm")
        refused = caught.value
        assert 400 <= refused.status < 500 and refused.method == "POST"
        assert "no-such-vm" in refused.error
        assert _one_line(refused) == f"{refused.error} (HTTP {refused.status})"
        with pytest.raises(ControlRefused) as caught:
            client.event_action("no-such-event", "approve")
        assert caught.value.status == 404 and "no-such-event" in caught.value.error
        assert client.events() == []  # nothing was created by the refused calls


def test_a_name_is_one_path_segment_never_another_route(server: ServerProcess) -> None:
    with ControlClient(server.control_url, TOKEN) as client:
        with pytest.raises(ControlRefused) as caught:
            client.document("../clock")
        assert caught.value.status == 404  # no VM of that name; not the clock's answer
        assert "..%2Fclock" in caught.value.error  # the name as sent, refused before routing


def test_the_metadata_endpoint_is_not_taken_for_the_control_api(server: ServerProcess) -> None:
    with ControlClient(server.imds_url) as client, pytest.raises(NotControlApi) as caught:
        client.events()
    assert _one_line(caught.value) == (
        f"{server.imds_url} is not a forewarn control API (the metadata endpoint?)"
    )


@pytest.mark.parametrize(
    ("url", "token", "message"),
    [
        ("localhost:8170", None, "--control 'localhost:8170' is missing its scheme"),
        ("ftp://h:1", None, "the control API speaks http or https, not ftp"),
        ("http://h:70000", None, "port 70000 is outside 1..65535"),
        ("http://h:1", "two words", "FOREWARN_TOKEN must be printable ASCII without spaces"),
    ],
)
def test_a_url_or_token_that_cannot_be_used_is_refused_before_sending(
    url: str, token: str | None, message: str
) -> None:
    with pytest.raises(ControlSettingError, match=message):
        ControlClient(url, token, origin="--control", token_origin="FOREWARN_TOKEN")


def test_the_testing_kit_says_which_call_was_refused(tmp_path: Path) -> None:
    with Forewarn() as forewarn:
        with pytest.raises(ForewarnError) as caught:
            forewarn.trigger("user-reboot", "no-such-vm")
        text = str(caught.value)
        assert text.startswith("POST /operations: ") and "no-such-vm" in text
        assert text.endswith(")") and "(HTTP 4" in text
        url = forewarn.control_url
    with pytest.raises(ForewarnError, match="not running"):
        forewarn.events()
    with ControlClient(url) as client, pytest.raises(ControlUnreachable):
        client.clock()  # stopped means stopped: nothing answers any more
