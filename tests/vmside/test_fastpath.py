"""The fast path (``forewarn.fastpath``) is the click commands without click.

Its table of options is held equal to the click commands' own, and each command line
below runs both ways, through the console script and through the click group alone: the
same exit code, output and errors either way, and click loaded exactly when the line is
one the fast path leaves to click (help, a value click refuses, click's variables, the
control API's ``events``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from forewarn.cli import main as group
from forewarn.client import DEFAULT_API_VERSION
from forewarn.fastpath import _API_VERSION, COMMANDS, FastCommand, Option
from tests.support.serverproc import ServerProcess, trigger
from tests.vmside.conftest import WEB0, Command

Start = Callable[..., Command]

#: Options of a click command the fast path leaves to click (the control API's).
CLICK_ONLY: dict[tuple[str, ...], set[str]] = {("events",): {"as_vm"}}


def click_command(words: tuple[str, ...]) -> click.Command:
    ctx = click.Context(group, info_name="forewarn")
    command: click.Command | None = group
    for word in words:
        assert isinstance(command, click.Group)
        command = command.get_command(ctx, word)
    assert command is not None
    return command


def click_view(option: click.Option, command: click.Command) -> Option:
    """``option`` as the fast path's table would say it."""
    kind = "text"
    if option.is_flag:
        kind = "flag"
    elif isinstance(option.type, click.Path):
        assert not option.type.dir_okay and not option.type.exists
        kind = "path"
    elif isinstance(option.type, click.FloatRange | type(click.FLOAT)):
        kind = "float"
    else:
        assert isinstance(option.type, click.Choice | type(click.STRING)), option.type
    minimum = getattr(option.type, "min", None)
    choices = tuple(option.type.choices) if isinstance(option.type, click.Choice) else ()
    envvar = option.envvar if isinstance(option.envvar, str) else None
    default = None if option.multiple else option.get_default(click.Context(command), call=True)
    assert default is None or isinstance(default, str | float | bool)
    assert option.name is not None
    return Option(tuple(option.opts + option.secondary_opts), option.name, kind,  # type: ignore[arg-type]
                  default, option.multiple, minimum, choices, envvar)  # fmt: skip


@pytest.mark.parametrize("fast", COMMANDS, ids=lambda c: " ".join(c.words))
def test_each_option_is_its_click_commands_own(fast: FastCommand) -> None:
    command = click_command(fast.words)
    options = {p.name: p for p in command.params if isinstance(p, click.Option)}
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    assert {o.dest for o in fast.options} == set(options) - CLICK_ONLY.get(fast.words, set())
    for option in fast.options:
        assert option == click_view(options[option.dest], command)
    if fast.arguments is None:
        assert arguments == []
    else:
        (argument,) = arguments
        assert (argument.name, argument.nargs, argument.required) == (fast.arguments, -1, True)
    automatic = [o.name for o in options.values() if o.allow_from_autoenv and not o.envvar]
    words = "_".join(fast.words).upper()
    assert fast.auto_env == (f"FOREWARN_{words}_" if automatic else None)


def test_the_default_api_version_is_the_clients() -> None:
    assert _API_VERSION == DEFAULT_API_VERSION


def both_ways(
    forewarn: Start, *args: str, env: dict[str, str] | None = None
) -> tuple[int, str, str, bool]:
    """Run ``args`` both ways: (code, stdout, stderr, whether the script loaded click)."""
    script, alone = forewarn(*args, env=env), forewarn(*args, via="click", env=env)
    fast, slow = script.wait(), alone.wait()
    assert fast.modules and slow.modules, "the wrapper wrote no module list"
    assert (fast.code, fast.stdout, fast.stderr) == (slow.code, slow.stdout, slow.stderr)
    return fast.code, fast.stdout, fast.stderr, "click" in fast.modules


def test_endpoint_commands_both_ways(
    forewarn: Start, server: ServerProcess, tmp_path: Path
) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    url = server.imds_url
    code, out, _, loaded = both_ways(
        forewarn, "events", "--url", url, "--source-address", WEB0, "--json"
    )
    assert (code, loaded) == (0, False)
    assert [e["EventId"] for e in json.loads(out)["Events"]] == [event_id]
    # click's own variable for --json (named after its dest): the line is click's to run
    code, out, _, loaded = both_ways(forewarn, "events", "--url", url, "--source-address", WEB0,
                                     env={"FOREWARN_EVENTS_AS_JSON": "1"})  # fmt: skip
    assert (code, loaded) == (0, True)
    assert json.loads(out)["Events"][0]["EventId"] == event_id
    code, _, err, loaded = both_ways(forewarn, "events", "--url", url, "--as", "web-0")
    assert (code, loaded) == (2, True)
    assert err.startswith("forewarn: error: --as asks the control API")
    code, _, err, loaded = both_ways(forewarn, "approve", "--url", url, "nope")
    assert (code, loaded) == (1, False)
    assert err == f"forewarn: error: not in the document of {url}: nope (nothing approved)\n"
    code, _, err, loaded = both_ways(forewarn, "approve", "--url", url, " ")
    assert (code, loaded, err) == (2, False, "forewarn: error: event ids must be non-empty\n")
    code, _, err, loaded = both_ways(forewarn, "approve", "--url", url)
    assert (code, loaded) == (2, True)
    assert "Missing argument" in err
    code, _, err, loaded = both_ways(forewarn, "watch", "--url", "http://127.0.0.1:9")
    assert (code, loaded) == (1, False)
    assert err.startswith("forewarn: error: cannot reach http://127.0.0.1:9/")
    code, _, err, loaded = both_ways(forewarn, "watch", "--interval", "0.01")
    assert (code, loaded) == (2, True)
    assert "0.01 is not in the range x>=0.05" in err
    code, out, _, loaded = both_ways(forewarn, "watch", "--help")
    assert (code, loaded) == (0, True)
    assert "Watch the Scheduled Events document live" in out


def test_discover_both_ways(forewarn: Start, tmp_path: Path) -> None:
    lease = tmp_path / "dhclient.leases"
    lease.write_text("lease {\n  option unknown-245 a8:3f:81:10;\n}\n")
    code, out, _, loaded = both_ways(forewarn, "discover", "--lease-file", str(lease), "--json")
    assert (code, loaded) == (0, False)
    assert json.loads(out)["url"] == "http://168.63.129.16"
    code, out, _, loaded = both_ways(forewarn, "discover", "--lease-file", str(lease),
                                     "--lease-file", "/nonexistent")  # fmt: skip
    assert (code, loaded) == (0, False)
    assert out.startswith("http://168.63.129.16  (from DHCP option 245 in ")
    code, _, err, loaded = both_ways(forewarn, "discover", "--lease-file", str(tmp_path))
    assert (code, loaded) == (2, True)
    assert "is a directory" in err
    code, _, err, loaded = both_ways(forewarn, "discover", "--leas", str(lease))
    assert (code, loaded) == (2, True)  # no abbreviations: click has none
    assert "No such option '--leas'" in err


def test_agent_commands_both_ways(forewarn: Start, tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(f'state_path = "{tmp_path / "state.db"}"\nmetrics_bind = ""\n')
    code, _, err, loaded = both_ways(forewarn, "agent", "status", "-c", str(config))
    assert (code, loaded) == (1, False)
    assert err.startswith("forewarn agent: error: no state file at ")
    code, out, _, loaded = both_ways(forewarn, "agent", "run", "--print-config",
                                     "--poll-interval", "0.5", "--dry-run",
                                     env={"FOREWARN_AGENT_CONFIG": str(config)})  # fmt: skip
    assert (code, loaded) == (0, False)
    printed = json.loads(out)
    assert (printed["poll_interval"], printed["dry_run"], printed["metrics_bind"]) == (
        0.5,
        True,
        "",
    )
    code, _, err, loaded = both_ways(forewarn, "agent", "run", "-c", str(config),
                                     "--poll-interval", "-1")  # fmt: skip
    assert (code, loaded) == (2, False)
    assert err.startswith("forewarn agent: error: ") and "poll_interval" in err
    code, _, err, loaded = both_ways(forewarn, "agent", "run", "--log-format", "xml")
    assert (code, loaded) == (2, True)
    assert "'xml' is not one of 'json', 'console'" in err
    code, out, _, loaded = both_ways(forewarn, "agent", "check-config", "-c", str(config))
    assert (code, loaded) == (0, True)  # not a command the fast path takes
    assert out.startswith(f"{config}: valid")
