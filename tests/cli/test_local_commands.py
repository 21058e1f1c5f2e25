"""Commands that need no server: --version, serve --print-config, serve's refusals."""

# ruff: noqa: E501  (tables of cases read best one case per line)

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from forewarn.cli import main
from forewarn.server import ServeConfig
from tests.support.serveconfig import effective, serve_runner

ENV_TIME_SCALE = "FOREWARN_SERVE_TIME_SCALE"


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A runner in an empty directory, with no FOREWARN_* variable from outside."""
    return serve_runner(tmp_path, monkeypatch)


def assert_one_error_line(result: Result, code: int, fragment: str) -> None:
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.stdout == ""
    assert "Traceback" not in result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("forewarn: error: ")
    assert fragment in line


def test_version_prints_the_package_version(runner: CliRunner) -> None:
    result = runner.invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"forewarn, version {version('forewarn')}\n"


def test_print_config_shows_the_defaults(runner: CliRunner) -> None:
    assert effective(runner) == ServeConfig().as_dict()


CONFIG_FILE = "time-scale: 5\nrate_limit: 2\nclock: virtual\nimds-bind: ['127.0.0.1:9001']\n"


@pytest.mark.parametrize(
    ("env", "flags", "time_scale"),
    [
        ({}, [], 5.0),
        ({ENV_TIME_SCALE: "7"}, [], 7.0),
        ({ENV_TIME_SCALE: "7"}, ["--time-scale", "9"], 9.0),
        ({}, ["--time-scale", "9"], 9.0),
    ],
    ids=["file", "env-over-file", "flag-over-env", "flag-over-file"],
)
def test_print_config_layers_defaults_file_env_and_flags(
    runner: CliRunner, env: dict[str, str], flags: list[str], time_scale: float
) -> None:
    Path("serve.yaml").write_text(CONFIG_FILE)
    config = effective(runner, "--config", "serve.yaml", *flags, env=env)
    assert config["time_scale"] == time_scale
    # what no higher layer sets still comes from the file, the rest from the defaults
    assert (config["rate_limit"], config["clock"]) == (2.0, "virtual")
    assert config["imds_bind"] == ["127.0.0.1:9001"]
    assert (config["db"], config["enablement"]) == ("forewarn.db", "on-first-request")


def test_env_alone_overrides_the_defaults(runner: CliRunner) -> None:
    config = effective(runner, env={ENV_TIME_SCALE: "60", "FOREWARN_SERVE_DB": "x.db"})
    assert (config["time_scale"], config["db"]) == (60.0, "x.db")


def test_print_config_hides_the_token(runner: CliRunner) -> None:
    config = effective(runner, "--control-bind", "0.0.0.0:8170", "--control-token", "s3cret")
    assert (config["control_bind"], config["control_token"]) == ("0.0.0.0:8170", "***")


def write(name: str, text: str) -> str:
    Path(name).write_text(text)
    return name


BAD_FLEET = """\
scopes:
  - kind: standalone
    name: jumpbox
  - kind: scale_set
    name: workers
    vms: 2
    terminate_notification: {enabled: true, timeout_minuts: 5}
"""


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["--control-bind", "0.0.0.0:1"], 2, "the control API would listen on 0.0.0.0, off loopback: set --control-token"),
        (["--control-bind", "0.0.0.0:1", "--print-config"], 2, "off loopback"),
        (["--time-scale", "0"], 2, "--time-scale must be a positive number"),
        (["--imds-bind", "nohost"], 2, "bind address 'nohost' must look like HOST:PORT"),
        (["--rate-limit", "-1"], 2, "--rate-limit must be >= 0"),
        (["--loop-slice", "0.05"], 2, "--loop-slice must be 0 (the kernel's) or 0.1-100 ms"),
        (["--loop-slice", "101"], 2, "--loop-slice must be 0 (the kernel's) or 0.1-100 ms"),
        (["--loop-slice", "nan"], 2, "--loop-slice must be 0 (the kernel's) or 0.1-100 ms"),
        (["--fleet", "missing.yaml"], 1, "cannot read fleet file missing.yaml: No such file or directory"),
        (["--fleet", "@bad-fleet"], 1, "unknown field `timeout_minuts` - at `$.scopes[1].terminate_notification`"),
        (["--fleet", "@not-yaml"], 1, "broken.yaml is not valid YAML"),
        (["--fleet", "@no-scopes"], 1, "missing required field `scopes`"),
    ],
    ids=["off-loopback", "off-loopback-print", "time-scale", "bind", "rate-limit",
         "loop-slice-short", "loop-slice-long", "loop-slice-nan", "missing-fleet", "unknown-fleet-key", "fleet-not-yaml", "fleet-no-scopes"],
)  # fmt: skip
def test_serve_refuses_with_one_error_line(
    runner: CliRunner, args: list[str], code: int, fragment: str
) -> None:
    files = {
        "@bad-fleet": write("bad.yaml", BAD_FLEET),
        "@not-yaml": write("broken.yaml", "scopes: [unclosed\n"),
        "@no-scopes": write("empty.yaml", "location: westeurope\n"),
    }
    args = [files.get(a, a) for a in args]
    result = runner.invoke(main, ["serve", "--db", "state.db", *args])
    assert_one_error_line(result, code, fragment)


def test_serve_refuses_a_non_loopback_control_bind_from_the_config_file(
    runner: CliRunner,
) -> None:
    write("serve.yaml", "control-bind: 0.0.0.0:8170\n")
    result = runner.invoke(main, ["serve", "--config", "serve.yaml"])
    assert_one_error_line(result, 2, "off loopback")


def test_unknown_key_in_the_config_file_is_an_error(runner: CliRunner) -> None:
    write("serve.yaml", "time_scal: 60\n")
    result = runner.invoke(main, ["serve", "--config", "serve.yaml", "--print-config"])
    assert result.exit_code != 0
    assert "time_scal" in result.stderr


def test_non_ascii_port_is_one_error_line(runner: CliRunner) -> None:
    result = runner.invoke(main, ["serve", "--control-bind", "127.0.0.1:²", "--print-config"])
    assert_one_error_line(result, 2, "127.0.0.1:²")
