"""``forewarn agent run | check-config | status``: the daemon's commands, as click sees
them (options, help, the docs); ``run`` and ``status`` do what ``forewarn.agent.commands``
says, which the fast path (``forewarn.fastpath``) calls without loading click.

Settings are layered defaults < ``--config`` TOML < ``FOREWARN_AGENT_*`` < flags; a
configuration error is one line naming the key, exit status 2, and nothing started.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from forewarn.agent.commands import agent_fail, load, run_agent, show_status
from forewarn.agent.programs import missing_program
from forewarn.termtext import fit

__all__ = ["agent"]

_NO_ENV: dict[str, Any] = {"allow_from_autoenv": False}
_F = TypeVar("_F", bound=Callable[..., Any])


def _config_option(required: bool = False) -> Callable[[_F], _F]:
    return click.option(
        "--config",
        "-c",
        "config_path",
        envvar="FOREWARN_AGENT_CONFIG",
        required=required,
        type=click.Path(dir_okay=False),
        default=None,
        help="TOML configuration file (env FOREWARN_AGENT_CONFIG).",
    )


@click.group(name="agent")
def agent() -> None:
    """The VM-side daemon: react to scheduled events, approve safely, recover."""


@agent.command()
@_config_option()
@click.option(
    "--vm-name", default=None, help="This VM's name if instance metadata has none.", **_NO_ENV
)
@click.option("--endpoint", default=None, help="Metadata endpoint URL.", **_NO_ENV)
@click.option("--local-address", default=None, help="Source address of requests.", **_NO_ENV)
@click.option("--state-path", default=None, help="SQLite state file.", **_NO_ENV)
@click.option("--poll-interval", type=float, default=None, help="Seconds between polls.", **_NO_ENV)
@click.option(
    "--metrics-bind", default=None, help='HOST:PORT of /metrics and probes ("" off).', **_NO_ENV
)
@click.option(
    "--dry-run",
    is_flag=True,
    default=None,
    help="Log what would be done; run no handler, approve nothing.",
    **_NO_ENV,
)
@click.option("--log-format", type=click.Choice(["json", "console"]), default=None, **_NO_ENV)
@click.option(
    "--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default=None, **_NO_ENV
)
@click.option(
    "--print-config", is_flag=True, help="Print the effective configuration and exit.", **_NO_ENV
)
def run(config_path: str | None, print_config: bool, **flags: Any) -> None:
    """Run the agent until SIGTERM or SIGINT."""
    run_agent(config_path, print_config, **flags)


@agent.command("check-config")
@_config_option(required=True)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing when the file is valid.")
@click.option(
    "--skip-programs",
    is_flag=True,
    help="Do not check that exec/kubectl programs exist (checking off the target VM).",
)
def check_config(config_path: str, quiet: bool, skip_programs: bool) -> None:
    """Validate a configuration file (and import python handlers); exit 2 when invalid."""
    from forewarn.agent.handlers import HandlerFailed, build_handlers

    config = load(config_path, {})
    try:
        build_handlers(config)
    except HandlerFailed as exc:
        agent_fail(f"{config_path}: handler: {exc}", 2)
    for name, spec in config.handlers.items():
        problem = "" if skip_programs else missing_program(spec)
        if problem:
            agent_fail(f"{config_path}: handlers.{name}.argv: {problem}", 2)
    if quiet:
        return
    lines = [f"{config_path}: valid"]
    kinds = [f"{name} ({spec.TAG})" for name, spec in config.handlers.items()]
    lines += [f"  handlers: {', '.join(kinds) or 'none'}", "  rules, first match wins:"]
    if config.ignore_freeze_under > 0:
        lines.append(f"    short-freeze: ignore Freeze under {config.ignore_freeze_under:g} s")
    for index, rule in enumerate(config.rules):
        name = config.rule_name(index)
        if rule.ignore:
            lines.append(f"    {name}: ignore")
            continue
        lines.append(
            f"    {name}: handlers [{', '.join(rule.handlers)}], approval {rule.approval.value}"
        )
    lines.append("    (anything else: ignore)")
    click.echo(fit("\n".join(lines)))


@agent.command()
@_config_option()
@click.option("--state-path", default=None, help="SQLite state file.", **_NO_ENV)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(config_path: str | None, state_path: str | None, as_json: bool) -> None:
    """What the agent has seen and done (from its state file), and whether it is ready."""
    show_status(config_path, state_path, as_json)
