"""``forewarn serve`` as a process: what its banner promises works."""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.serverproc import VIRTUAL, ServerProcess


def banner_lines(server: ServerProcess, timeout: float = 10.0) -> list[str]:
    """The banner, once its last line (the curl line of another VM) has been printed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [line for line in server.banner if line.startswith("forewarn:")]
        if any("as VM" in line for line in lines):
            return lines
        time.sleep(0.02)
    raise AssertionError(f"incomplete banner: {server.banner}")


def curl(line: str) -> tuple[str | None, dict[str, str], str]:
    """(source address, headers, URL) of a ``curl`` command printed in the banner."""
    words = shlex.split(line[line.index("curl") :])
    assert words[:2] == ["curl", "-s"], words
    interface, headers, url = None, {}, words[-1]
    for flag, value in zip(words[2:-1:2], words[3:-1:2], strict=True):
        if flag == "--interface":
            interface = value
        else:
            assert flag == "-H", words
            name, _, text = value.partition(":")
            headers[name] = text
    return interface, headers, url


@pytest.fixture
def server(start_server: Callable[..., ServerProcess]) -> ServerProcess:
    return start_server(VIRTUAL)


def get(url: str, headers: dict[str, str], source: str | None = None) -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=source) if source else None
    with httpx.Client(transport=transport, timeout=10, trust_env=False) as client:
        return client.get(url, headers=headers)


def test_banner_prints_the_listeners(server: ServerProcess) -> None:
    lines = banner_lines(server)
    assert lines[0] == f"forewarn: metadata endpoint on {server.imds_url}"
    assert f"forewarn: control API on {server.control_url} (OpenAPI: /openapi.json)" in lines
    assert any(
        re.fullmatch(r"forewarn: 14 VMs in 4 scopes; clock virtual, time scale 1; db .*", line)
        for line in lines
    )
    assert "forewarn: a plain request from 127.0.0.1 is VM 'web-0' (scope web)" in lines
    (ready,) = [line for line in lines if line.startswith("forewarn: ready in")]
    said = re.fullmatch(r"forewarn: ready in ([0-9.]+) s, ([0-9.]+) s of CPU \(after "
                        r"([0-9.]+) s of interpreter start and imports\)", ready)  # fmt: skip
    assert said, ready
    wall, cpu, before = map(float, said.groups())
    assert cpu > 0 and 0 < wall < 60 and 0 < before < 60  # the imports come before


def test_the_printed_curl_line_works_and_speaks_as_the_default_vm(server: ServerProcess) -> None:
    (line,) = [line for line in banner_lines(server) if line.startswith("forewarn: try")]
    source, headers, url = curl(line)
    assert (source, headers) == (None, {"Metadata": "true"})
    assert url.startswith(server.imds_url + "/metadata/scheduledevents?api-version=")
    response = get(url, headers)
    assert response.status_code == 200
    assert response.json() == {"DocumentIncarnation": 1, "Events": []}
    name = get(
        f"{server.imds_url}/metadata/instance/compute/name?api-version=2021-02-01&format=text",
        headers,
    )
    assert name.text == "web-0"


def test_the_printed_curl_line_of_another_vm_speaks_as_that_vm(server: ServerProcess) -> None:
    (line,) = [line for line in banner_lines(server) if "as VM" in line]
    vm = re.search(r"as VM '([^']+)'", line)
    assert vm
    source, headers, url = curl(line)
    assert source is not None
    server.control("POST", "/api/v1/operations", json={"kind": "user-reboot", "target": vm[1]})
    document = get(url, headers, source).json()
    assert [e["Resources"] for e in document["Events"]] == [[vm[1]]]
    name = get(
        f"{server.imds_url}/metadata/instance/compute/name?api-version=2021-02-01&format=text",
        headers,
        source,
    )
    assert name.text == vm[1]


def test_metrics_count_the_endpoint_responses(server: ServerProcess) -> None:
    for metadata in ("true", "true", "false"):
        server.imds(headers={"Metadata": metadata})
    response = server.control("GET", "/metrics")
    assert response.status_code == 200
    path = "/metadata/scheduledevents"
    by_status = {
        s.labels["status"]: s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
        if s.name == "forewarn_imds_responses_total" and path in s.labels.values()
    }
    assert by_status == {"200": 2.0, "400": 1.0}


def test_a_websocket_upgrade_is_answered_as_plain_http_and_logs_nothing(
    server: ServerProcess,
) -> None:
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}  # fmt: skip
    for _ in range(3):
        answer = get(f"{server.control_url}/api/v1/clock", upgrade)
        assert answer.status_code == 200 and "now" in answer.json()
    get(f"{server.control_url}/healthz", {})  # written after the upgrades, if they logged
    time.sleep(0.5)
    said = [line for line in server.banner if "Unsupported upgrade" in line
            or "WebSocket library" in line]  # fmt: skip
    assert not said, said
