"""A mistyped control URL or token is one error line that says what to fix, never a
traceback nor a misleading "is the server running?"."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cli import Result, run_cli


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://[::1", "--control 'http://[::1' is not a valid URL"),
        ("localhost:8170", "--control 'localhost:8170' is missing its scheme: use http://localhost:8170"),
        ("127.0.0.1:8170", "--control '127.0.0.1:8170' is missing its scheme: use http://127.0.0.1:8170"),
        ("ftp://127.0.0.1:8170", "the control API speaks http or https, not ftp"),
        ("http://127.0.0.1:99999", "port 99999 is outside 1..65535"),
        ("http://", "--control 'http://' names no host"),
    ],
    ids=["unclosed-ipv6", "no-scheme", "no-scheme-address", "ftp", "port", "no-host"],
)  # fmt: skip
def test_a_malformed_control_url_is_one_line_naming_the_mistake(url: str, message: str) -> None:
    line = run_cli(["events"], url).assert_one_error_line(message)
    assert "forewarn serve" not in line  # not "is `forewarn serve` running?"


def run_with_env(*args: str, **env: str) -> Result:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FOREWARN_")}
    proc = subprocess.run(
        [sys.executable, "-m", "forewarn", *args],
        capture_output=True, text=True, timeout=60, env={**clean, **env},
    )  # fmt: skip
    return Result(proc.returncode, proc.stdout, proc.stderr)


def test_the_error_names_forewarn_control_when_the_url_came_from_it() -> None:
    result = run_with_env("topology", FOREWARN_CONTROL="localhost:8170")
    result.assert_one_error_line("FOREWARN_CONTROL 'localhost:8170' is missing its scheme")


def test_serve_ignores_a_bad_forewarn_control() -> None:
    result = run_with_env("serve", "--print-config", FOREWARN_CONTROL="http://[::1")
    assert (result.code, result.stderr) == (0, "")


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--token", "s\u00e9same"], {}, "--token must be printable ASCII"),
        ([], {"FOREWARN_TOKEN": "two words"}, "FOREWARN_TOKEN must be printable ASCII"),
    ],
    ids=["flag", "environment"],
)
def test_a_token_no_header_can_carry_is_one_error_line(
    args: list[str], env: dict[str, str], message: str
) -> None:
    result = run_with_env("--control", "http://127.0.0.1:9", *args, "events", **env)
    result.assert_one_error_line(message)
