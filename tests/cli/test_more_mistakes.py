"""More user mistakes, each one clear line (found by a newcomer walkthrough)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from forewarn.cli import main
from tests.cli.test_local_commands import assert_one_error_line, effective, runner, write
from tests.support.cli import run_cli
from tests.support.serverproc import ServerProcess

__all__ = ["runner"]  # the fixture, re-used


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--time-scale", "inf"], "--time-scale must be a positive number"),
        (["--rate-limit", "nan"], "--rate-limit must be >= 0"),
        (["--imds-bind", "127.0.0.1:9000", "--control-bind", "127.0.0.1:9000"], "port 9000"),
    ],
    ids=["inf-scale", "nan-rate", "same-port"],
)
def test_serve_settings_are_checked(runner: CliRunner, args: list[str], fragment: str) -> None:
    result = runner.invoke(main, ["serve", *args, "--print-config"])
    assert_one_error_line(result, 2, fragment)


@pytest.mark.parametrize(
    ("fleet", "fragment"),
    [
        ("scopes:\n  - {kind: standalone, name: a}\n  - {kind: standalone, name: a, vms: 1}\n"
         "scopes: []\n", "key 'scopes' is given twice (line 4, column 1)"),
        ("scopes: []\n", "a fleet needs at least one scope"),
        ("hosts: 0\nscopes:\n  - {kind: standalone, name: a}\n", "hosts must be at least 1"),
        ("scopes:\n  - {kind: standalone, name: 'x y'}\n", "scope name 'x y' must be"),
        ("scopes:\n  - {kind: availability_set, name: s, vms: [{name: a, port: 70000}]}\n",
         "port 70000 is outside 1..65535"),
        ("scopes:\n  - {kind: availability_set, name: s, vms: ["
         "{name: a, host: h, update_domain: 0}, {name: b, host: h, update_domain: 1}]}\n",
         "a host holds one update domain of a scope"),
    ],
    ids=["duplicate-key", "no-scopes", "no-hosts", "bad-name", "bad-port", "two-uds-on-a-host"],
)  # fmt: skip
def test_bad_fleet_files_are_one_error_line(runner: CliRunner, fleet: str, fragment: str) -> None:
    write("fleet.yaml", fleet)
    result = runner.invoke(main, ["serve", "--db", "s.db", "--fleet", "fleet.yaml"])
    assert_one_error_line(result, 1, fragment)
    assert not Path("s.db").exists()  # a refused fleet leaves no database behind


def test_a_config_file_may_give_one_bind_as_a_string(runner: CliRunner) -> None:
    write("serve.yaml", "imds_bind: 127.0.0.1:8869\n")
    assert effective(runner, "--config", "serve.yaml")["imds_bind"] == ["127.0.0.1:8869"]


def test_a_broken_config_file_is_one_error_line(runner: CliRunner) -> None:
    write("serve.yaml", "time_scale: [60\n")
    result = runner.invoke(main, ["serve", "--config", "serve.yaml"])
    assert_one_error_line(result, 2, "serve.yaml is not valid YAML")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["advance", "-1"], "'-1' must not be negative"),
        (["advance", "5 parsecs"], "is not a duration like 90, 90s, 5m"),
        (["advance", "nan"], "'nan' is not a number of seconds"),
        (["trigger", "user-reboot", "web-0", "--notice", "inf"], "'inf' is not a number"),
        (["events", "--api-version", "2017-03-01"], "--api-version needs --as VM"),
    ],
    ids=["negative-advance", "unit-advance", "nan-advance", "inf-notice", "version-without-as"],
)
def test_client_commands_check_their_values(
    server: ServerProcess, args: list[str], fragment: str
) -> None:
    run_cli(args, server.control_url).assert_one_error_line(fragment)


def test_forewarn_control_names_the_server(server: ServerProcess) -> None:
    env = {**os.environ, "FOREWARN_CONTROL": server.control_url}
    proc = subprocess.run(
        [sys.executable, "-m", "forewarn", "trigger", "user-reboot", "web-0"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert server.control("GET", "/api/v1/events").json()[0]["resources"] == ["web-0"]


def test_trigger_says_which_vms_get_no_notice(
    start_server: Callable[..., ServerProcess],
) -> None:
    server = start_server(["--clock", "virtual"])  # faithful enablement: nobody asked yet
    result = run_cli(["trigger", "host-update", "host-2"], server.control_url)
    assert result.code == 0, result.stderr
    assert "events none" in result.stdout
    assert "no notice for web-1, web-4, workers_2, FrontEnd_IN_1" in result.stdout
