"""``trigger`` says what the VMs will see, refuses targets an operation does not take, and
takes notices in the server's clock; ``history`` checks --limit and names operations."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from tests.support.cli import run_cli
from tests.support.serverproc import VIRTUAL, ServerProcess

SCALED = ["--clock", "virtual", "--enablement", "always", "--time-scale", "60"]


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server at time scale 60 for the whole module (each test targets its own VMs)."""
    server = ServerProcess(tmp_path_factory.mktemp("scaled") / "s.db", SCALED).start()
    yield server
    server.stop()


def cli(server: ServerProcess, *args: str) -> tuple[int, str, str]:
    result = run_cli(args, server.control_url)
    return result.code, result.stdout, result.stderr


def test_hardware_failure_prints_what_the_vm_sees(scaled: ServerProcess) -> None:
    code, out, err = cli(scaled, "trigger", "hardware-failure", "web-0")
    assert (code, err) == (0, "")
    match = re.fullmatch(
        r"(op-\w+): hardware-failure on vm web-0 \(started\), Started at once \(no NotBefore\), "
        r"events (\S+)\n",
        out,
    )
    assert match, out
    document = scaled.control("GET", "/api/v1/documents/web-0").json()
    (event,) = [e for e in document["Events"] if e["EventId"] == match[2]]
    assert (event["EventStatus"], event["NotBefore"]) == ("Started", "")


def test_a_scheduled_operation_still_prints_its_not_before(scaled: ServerProcess) -> None:
    code, out, _ = cli(scaled, "trigger", "user-reboot", "web-1")
    assert code == 0
    assert re.search(r"\(scheduled\), NotBefore \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, events ", out)


@pytest.mark.parametrize(
    "kind", ["live-migration", "degraded-hardware", "hardware-failure", "spot-eviction"]
)
def test_host_level_operations_refuse_a_scope(scaled: ServerProcess, kind: str) -> None:
    before = scaled.control("GET", "/api/v1/operations").json()
    result = run_cli(["trigger", kind, "workers"], scaled.control_url)
    result.assert_one_error_line(
        f"{kind} concerns a VM or the VMs of a host, not a whole scope; name a VM or a host"
    )
    assert scaled.control("GET", "/api/v1/operations").json() == before


def test_rolling_maintenance_still_takes_a_scope(scaled: ServerProcess) -> None:
    code, out, err = cli(scaled, "trigger", "platform-redeploy", "shop")
    assert (code, err) == (0, ""), err
    assert "platform-redeploy on scope shop (scheduled)" in out


def test_notice_help_names_the_clock() -> None:
    result = run_cli(["trigger", "--help"], None)
    help_text = " ".join(result.stdout.split())
    assert "Notice in the server's clock (90, 90s, 5m, PT5M), already divided by its " in (
        help_text
    )
    assert "--time-scale" in help_text
    assert "its minimum and maximum scale alike" in help_text
    assert "in platform seconds (never scaled)" in help_text  # --duration


def test_a_scaled_notice_below_the_scaled_minimum_names_both_clocks(
    scaled: ServerProcess,
) -> None:
    run_cli(
        ["trigger", "degraded-hardware", "web-2", "--notice", "9"], scaled.control_url
    ).assert_one_error_line(
        "notice 9 s is below the minimum of 10 s for degraded-hardware "
        "(time scale 60: 600 s of platform time)"
    )
    code, _, err = cli(scaled, "trigger", "degraded-hardware", "web-2", "--notice", "10")
    assert (code, err) == (0, "")


def test_a_scaled_notice_has_a_scaled_maximum(scaled: ServerProcess) -> None:
    run_cli(
        ["trigger", "degraded-hardware", "web-3", "--notice", "10081"], scaled.control_url
    ).assert_one_error_line(
        "notice 10081 s is more than the maximum of 10080 s for degraded-hardware "
        "(time scale 60: 7 days of platform time)"
    )
    code, _, err = cli(scaled, "trigger", "degraded-hardware", "web-3", "--notice", "10080")
    assert (code, err) == (0, "")


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ("-1", "Invalid value for '--limit': -1 is not a number of entries from 1 to 10000"),
        ("0", "0 is not a number of entries from 1 to 10000"),
        ("10001", "10001 is not a number of entries from 1 to 10000"),
        ("ten", "'ten' is not a valid integer"),
    ],
)
def test_history_limit_is_checked_before_asking(limit: str, message: str) -> None:
    # no server at this URL: the limit is refused before any request
    result = run_cli(["history", "--limit", limit], "http://127.0.0.1:9")
    line = result.assert_one_error_line(message)
    assert "last" not in line and "cannot reach" not in line


def test_history_names_the_operation_of_every_operation_row(
    start_server: Callable[..., ServerProcess],
) -> None:
    server = start_server(VIRTUAL)
    trigger = run_cli(["trigger", "host-update", "host-3"], server.control_url)
    op_id = trigger.stdout.split(":")[0]
    result = run_cli(["history"], server.control_url)
    rows = [line for line in result.stdout.splitlines() if " operation." in line]
    assert rows and all(op_id in row for row in rows), result.stdout
    assert run_cli(["history", "--limit", "1", "--json"], server.control_url).code == 0
