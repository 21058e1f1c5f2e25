"""``forewarn serve`` logs: plain text unless stderr is a terminal (and NO_COLOR is unset),
``--log-level`` from a flag, the environment or a config file; a banner in good English."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from click.testing import CliRunner

from forewarn.cli import main
from tests.cli.test_local_commands import assert_one_error_line, effective, runner, write
from tests.support.serverproc import VIRTUAL, ServerProcess, free_port

__all__ = ["runner"]  # the fixture, re-used

ESC = "\x1b["


def run_serve(tmp_path: Path, args: list[str], stderr: int | IO[Any], env: dict[str, str]) -> None:
    """Serve until one operation has been logged, then stop with SIGTERM."""
    control = free_port()
    command = [
        sys.executable, "-m", "forewarn", "serve", *VIRTUAL,
        "--db", str(tmp_path / "logs.db"),
        "--imds-bind", f"127.0.0.1:{free_port()}", "--control-bind", f"127.0.0.1:{control}",
        *args,
    ]  # fmt: skip
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FOREWARN_")}
    clean.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=stderr, text=True, env={**clean, **env}
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "control API on" in line:
                break
        else:
            raise AssertionError(f"serve exited early with {proc.wait()}")
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        reply = httpx.post(
            f"http://127.0.0.1:{control}/api/v1/operations",
            json={"kind": "user-reboot", "target": "web-0"},
            timeout=10,
        )
        assert reply.status_code == 201, reply.text
        time.sleep(0.2)  # the log line is written after the reply
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0


def logged_to_file(tmp_path: Path, *args: str, **env: str) -> str:
    path = tmp_path / "stderr.log"
    with path.open("w") as stderr:
        run_serve(tmp_path, list(args), stderr, env)
    return path.read_text()


def logged_to_terminal(tmp_path: Path, *args: str, **env: str) -> str:
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        run_serve(tmp_path, list(args), slave, env)
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    return b"".join(chunks).decode(errors="replace")


def test_logs_redirected_to_a_file_are_plain_text(tmp_path: Path) -> None:
    text = logged_to_file(tmp_path)
    assert "operation.created" in text
    assert ESC not in text


@pytest.mark.parametrize("no_color", [None, "1"], ids=["colour", "NO_COLOR"])
def test_logs_on_a_terminal_are_coloured_unless_no_color(
    tmp_path: Path, no_color: str | None
) -> None:
    text = logged_to_terminal(tmp_path, **({"NO_COLOR": no_color} if no_color else {}))
    assert "operation.created" in text
    assert (ESC in text) == (no_color is None)


def json_levels(text: str) -> set[str]:
    return {json.loads(line)["level"] for line in text.splitlines() if line.startswith("{")}


@pytest.mark.parametrize(
    ("how", "level", "shown"),
    [
        ("flag", "debug", {"debug", "info"}),  # (debug: the loop slice's line)
        ("flag", "warning", set()),
        ("flag", "error", set()),
        ("env", "warning", set()),
        ("config", "warning", set()),
    ],
)
def test_log_level_drops_what_is_below_it(
    tmp_path: Path, how: str, level: str, shown: set[str]
) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(f"log_level: {level}\n")
    args, env = ["--log-format", "json"], {}
    if how == "flag":
        args += ["--log-level", level]
    elif how == "env":
        env["FOREWARN_SERVE_LOG_LEVEL"] = level
    else:
        args += ["--config", str(config)]
    text = logged_to_file(tmp_path, *args, **env)
    assert json_levels(text) == shown, text
    assert ("operation.created" in text) == bool(shown)


def test_print_config_shows_the_log_level(runner: CliRunner) -> None:
    assert effective(runner)["log_level"] == "info"
    assert effective(runner, "--log-level", "error")["log_level"] == "error"
    write("serve.yaml", "log-level: debug\n")
    assert effective(runner, "--config", "serve.yaml")["log_level"] == "debug"


def test_an_unknown_log_level_is_one_error_line(runner: CliRunner) -> None:
    result = runner.invoke(main, ["serve", "--log-level", "loud"])
    assert_one_error_line(result, 2, "'loud' is not one of 'debug', 'info', 'warning', 'error'")


@pytest.fixture
def fleet_banner(
    tmp_path: Path, start_server: Callable[..., ServerProcess]
) -> Iterator[Callable[[str], str]]:
    def banner(fleet: str) -> str:
        path = tmp_path / f"fleet{free_port()}.yaml"
        path.write_text(fleet)
        server = start_server([*VIRTUAL, "--fleet", str(path)], db=path.with_suffix(".db"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            counts = [line for line in server.banner if " in " in line and "clock" in line]
            if counts:
                return counts[0]
            time.sleep(0.02)
        raise AssertionError(server.banner)

    yield banner


@pytest.mark.parametrize(
    ("fleet", "said"),
    [
        ("scopes:\n  - {kind: standalone, name: solo}\n", "forewarn: 1 VM in 1 scope; "),
        ("scopes:\n  - {kind: availability_set, name: s, vms: 2}\n"
         "  - {kind: standalone, name: solo}\n", "forewarn: 3 VMs in 2 scopes; "),
    ],
    ids=["one", "several"],
)  # fmt: skip
def test_the_banner_counts_in_good_english(
    fleet_banner: Callable[[str], str], fleet: str, said: str
) -> None:
    assert fleet_banner(fleet).startswith(said)
