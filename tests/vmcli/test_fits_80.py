"""The VM commands' text that is not a table keeps the 80-column rule too: ``agent status``,
``discover``, ``agent check-config`` and errors carrying URLs, each line at most 80
columns, the ids and URLs a user copies whole on one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from forewarn.agent.state import State
from tests.support.cli import Result, cli_env, run_cli, run_cli_on_a_terminal
from tests.support.serverproc import ServerProcess, trigger

IDS = [f"{n}2345678-ABCD-4EF0-8123-456789ABCDEF" for n in (1, 2, 3)]
T0 = 1_800_000_000.0


def lines_of(result: Result, stream: str = "stdout") -> list[str]:
    """The lines of ``stream``, each checked to fit 80 columns."""
    lines = getattr(result, stream).splitlines()
    too_long = [line for line in lines if len(line) > 80]
    assert not too_long, "\n".join(too_long)
    return lines


def joined(lines: list[str]) -> str:
    """The text as one line again (the wrapping undone)."""
    return " ".join(line.strip() for line in lines)


def test_agent_status_fits_80_columns_with_each_id_whole(short_tmp: Path) -> None:
    path = short_tmp / "agent-state.db"
    state = State(path)
    kinds = [("my-reboots", False, "Reboot"), ("short-freeze", True, "Freeze"),
             ("group-maintenance", False, "Redeploy")]  # fmt: skip
    for event_id, (rule, ignored, kind) in zip(IDS, kinds, strict=True):
        state.seen(event_id, vm_name="web-0", rule=rule, ignored=ignored, event_type=kind,
                   event={}, at=T0)  # fmt: skip
    for column, at in [("handled_at", 5), ("approved_at", 6), ("started_seen_at", 900),
                       ("gone_at", 1500), ("recovered_at", 1501)]:  # fmt: skip
        state.mark(IDS[0], column, T0 + at, "ok" if column == "handled_at" else "after-handlers")
    state.mark(IDS[2], "handled_at", T0 + 5, "ok")
    state.note_approval(IDS[2], "coordinated")
    state.close()

    result = run_cli(["agent", "status", "--state-path", str(path)], columns=80)
    assert result.code == 0, result.stderr
    lines = lines_of(result)
    assert f"state: {path} (3 event(s))" in joined(lines)
    starts = [next(n for n, line in enumerate(lines) if line.startswith(f"  {i} ")) for i in IDS]
    first = "\n".join(lines[starts[0] : starts[1]])
    for fact in ("Reboot", "rule my-reboots", "seen 2027-01-15 08:00:00", "(ok)",
                 "approved 2027-01-15 08:00:06", "started 2027-01-15 08:15:00",
                 "gone 2027-01-15 08:25:00", "recovered 2027-01-15 08:25:01"):  # fmt: skip
        assert fact in first, first
    assert "ignored (short-freeze)" in lines[starts[1]]
    assert "approved - (coordinated)" in "\n".join(lines[starts[2] :])


def test_discover_fits_80_columns(short_tmp: Path) -> None:
    empty = short_tmp / "l"
    empty.write_text("lease {\n}\n")
    lines = lines_of(run_cli(["discover", "--lease-file", str(empty)], columns=80))
    assert lines[0].startswith("http://169.254.169.254  (the default: no $FOREWARN_IMDS_URL")
    assert joined(lines).endswith("or DHCP option 245)")


def test_a_check_config_error_carrying_a_url_keeps_it_whole(short_tmp: Path) -> None:
    url = "ftp://hooks.example.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"
    config = short_tmp / "agent.toml"
    config.write_text(f'[handlers.notify]\ntype = "webhook"\nurl = "{url}"\n')
    result = run_cli_on_a_terminal(["agent", "check-config", "-c", str(config)])
    assert result.code == 2
    lines = lines_of(result, "stderr")
    assert joined(lines) == (
        f"forewarn agent: error: {config}: handlers.notify.url: '{url}' is not an http(s) URL"
    )
    assert any(f"'{url}'" in line for line in lines), result.stderr  # whole, to copy


def test_check_config_s_summary_fits_80_columns(short_tmp: Path) -> None:
    config = short_tmp / "agent.toml"
    handlers = [f"a-handler-with-a-long-name-{n}" for n in range(4)]
    config.write_text(
        "".join(f'[handlers.{h}]\ntype = "exec"\nargv = ["true"]\n' for h in handlers)
        + f"[[rules]]\nhandlers = {handlers!r}\n".replace("'", '"')
    )
    result = run_cli(["agent", "check-config", "--skip-programs", "-c", str(config)], columns=80)
    assert result.code == 0, result.stderr
    text = joined(lines_of(result))
    assert f"handlers: {', '.join(f'{h} (exec)' for h in handlers)} rules" in text, text
    assert f"rules[0]: handlers [{', '.join(handlers)}], approval never" in text, text


def test_an_endpoint_error_carrying_a_url_fits_80_columns(server: ServerProcess) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    for command in (["events"], ["approve", event_id]):
        args = [*command, "--url", server.imds_url, "--api-version", "2015-01-01"]
        result = run_cli_on_a_terminal(args)
        assert result.code == 1
        lines = lines_of(result, "stderr")
        assert lines[0].startswith("forewarn: error: HTTP 400 from"), result.stderr
        url = f"{server.imds_url}/metadata/scheduledevents?api-version=2015-01-01"
        assert any(url in line for line in lines), result.stderr
    assert run_cli(["approve", event_id, "--url", server.imds_url], columns=80).code == 0


def test_without_a_terminal_or_columns_an_error_fits_80_columns(short_tmp: Path) -> None:
    """No terminal and no COLUMNS (systemd's journal, a CI job): 80 columns, as the rest."""
    url = "ftp://hooks.example.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"
    config = short_tmp / "agent.toml"
    config.write_text(f'[handlers.notify]\ntype = "webhook"\nurl = "{url}"\n')
    env = {k: v for k, v in cli_env().items() if k != "COLUMNS"}
    result = subprocess.run(
        [sys.executable, "-m", "forewarn", "agent", "check-config", "-c", str(config)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    lines = lines_of(Result(result.returncode, result.stdout, result.stderr), "stderr")
    assert joined(lines) == (
        f"forewarn agent: error: {config}: handlers.notify.url: '{url}' is not an http(s) URL"
    )
