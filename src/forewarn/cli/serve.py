"""``forewarn serve``: settings layered from a config file, the environment and flags."""

from __future__ import annotations

import sys
from typing import Any

import click
import yaml

from forewarn.cli.errors import fail
from forewarn.contract.addresses import DEFAULT_CONTROL_BIND, DEFAULT_IMDS_BIND
from forewarn.contract.limits import RATE_LIMIT
from forewarn.fabric import FabricError
from forewarn.fleet import FleetError, YamlError, read_yaml
from forewarn.imds.recorder import RecordError, check_record_path
from forewarn.scenarios.dashboard_player import scenario_runs
from forewarn.server import (
    ConfigError,
    ServeConfig,
    banner,
    bind_listeners,
    build_runtime,
    configure_logging,
    prepare,
    run_server,
)
from forewarn.server.heap import freeze_imports
from forewarn.server.logs import LOG_LEVELS
from forewarn.server.start_times import StartTimes
from forewarn.server.workers import run_workers
from forewarn.store import StoreError

__all__ = ["serve"]


def _load_config_file(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """``--config FILE``: a YAML mapping of serve options, below env and flags."""
    if value is None:
        return
    try:
        data = read_yaml(value) or {}
    except OSError as exc:
        raise click.BadParameter(f"cannot read {value}: {exc.strerror}") from None
    except YamlError as exc:
        raise click.BadParameter(str(exc)) from None
    if not isinstance(data, dict):
        raise click.BadParameter(f"{value} must hold a mapping of option: value")
    settings = {str(k).replace("-", "_"): v for k, v in data.items()}
    multiple = {p.name for p in ctx.command.params if getattr(p, "multiple", False)}
    for name in multiple & set(settings):
        if isinstance(settings[name], str):
            settings[name] = [settings[name]]
    known = {p.name for p in ctx.command.params if p.name and p.name not in ("config",)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise click.BadParameter(
            f"{value}: unknown setting {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    ctx.default_map = settings


@click.command()
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    callback=_load_config_file,
    is_eager=True,
    expose_value=False,
    help="YAML file of serve options.",
)
@click.option(
    "--fleet",
    type=click.Path(dir_okay=False),
    default=None,
    help="Fleet file (YAML). Default: the fleet stored in --db, else the demo fleet.",
)
@click.option("--db", default="forewarn.db", help="SQLite database (state survives restarts).")
@click.option(
    "--new-db",
    is_flag=True,
    default=False,
    help="Start a new, empty --db where one was deleted (its marker <db>.id remains); "
    "without it, such a start is refused.",
)
@click.option(
    "--store",
    default=None,
    metavar="postgresql://...",
    help="Share the fleet's state in PostgreSQL instead of --db: every process given the "
    "same URL serves the same fleet (one leads, the others follow).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    help="Processes serving the fleet on the same ports (needs --store).",
)
@click.option(
    "--clock",
    type=click.Choice(["real", "virtual"]),
    default=None,
    help="virtual: time moves only via the control API (clock/advance). "
    "Default: what --db remembers, else real.",
)
@click.option(
    "--time-scale",
    type=float,
    default=None,
    help="Divide every platform duration by this (60: a Reboot gets 15 s notice). "
    "Default: what --db remembers, else 1.",
)
@click.option(
    "--imds-bind",
    multiple=True,
    default=[DEFAULT_IMDS_BIND],
    help="HOST:PORT of the metadata endpoint (repeatable).",
)
@click.option("--control-bind", default=DEFAULT_CONTROL_BIND, help="HOST:PORT of the control API.")
@click.option(
    "--control-token",
    default=None,
    help="Require this Bearer token on the control API (needed off loopback).",
)
@click.option(
    "--control-host",
    "control_hosts",
    multiple=True,
    metavar="NAME[:PORT]",
    help="Another name the control API answers to, besides its own address (repeatable).",
)
@click.option(
    "--per-vm-ports/--no-per-vm-ports",
    default=True,
    help="Also listen on each VM's dedicated port from the fleet file.",
)
@click.option(
    "--rate-limit",
    type=float,
    default=RATE_LIMIT,
    help="Requests per second per VM before 429 (0: off).",
)
@click.option(
    "--first-call-delay",
    type=float,
    default=0.0,
    help="Seconds the first request of a scope waits (Azure: up to 120).",
)
@click.option(
    "--imds-header-timeout",
    type=float,
    default=10.0,
    help="Seconds a client has to send a whole request head (else 408 and close).",
)
@click.option(
    "--imds-body-timeout",
    type=float,
    default=30.0,
    help="Seconds a client has to send a request body once its head is in.",
)
@click.option(
    "--imds-max-connections-per-address",
    type=int,
    default=256,
    help="Open connections per client address; more are closed at once "
    "(never more than a quarter of the open-file limit).",
)
@click.option(
    "--api-header-timeout",
    type=float,
    default=10.0,
    help="Seconds a client of the control API or ARM has from connecting (TLS handshake "
    "included) to a whole request head, and for each later head (else closed).",
)
@click.option(
    "--api-max-connections-per-address",
    type=int,
    default=1024,
    help="Open connections to the control API and ARM per client address; a new one "
    "closes the address's slowest or longest idle (never more than half their share of "
    "the open files).",
)
@click.option(
    "--loop-slice",
    type=float,
    default=0.1,
    metavar="MS",
    help="The event loop's CPU slice, 0.1-100 ms (Linux 6.12+): short, it answers a request "
    "as it arrives instead of after another thread's slice on its core; 0 leaves the "
    "kernel's default.",
)
@click.option(
    "--enablement",
    type=click.Choice(["on-first-request", "always"]),
    default="on-first-request",
    help="When a scope's Scheduled Events are on (Azure: after its first request).",
)
@click.option(
    "--record",
    type=click.Path(dir_okay=False),
    default=None,
    help="Append every document served to each VM, whenever it changes, to this JSON-lines "
    "file (with how often each was served); `forewarn replay` plays it back.",
)
@click.option(
    "--log-format",
    type=click.Choice(["console", "json"]),
    default="console",
    help="console: lines for a person (coloured on a terminal unless NO_COLOR is set); "
    "json: one object per line.",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS),
    default="info",
    help="Log from this level up (info: every transition; warning: problems only).",
)
@click.option(
    "--arm-bind",
    default=None,
    metavar="HOST:PORT",
    help="Also serve the Azure control plane (ARM routes of azure-mgmt-compute, Maintenance "
    "acknowledge) over HTTPS here; off by default.",
)
@click.option(
    "--arm-token",
    default=None,
    help="Require this Bearer token, or a token forewarn signed (managed identity, "
    "az login), on ARM (default: any token).",
)
@click.option(
    "--arm-client-secret",
    default=None,
    help="The client secret ARM's token route requires (default: the --arm-token, when set).",
)
@click.option(
    "--arm-ca-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the ARM listener's local CA is kept (default: forewarn-ca beside --db).",
)
@click.option(
    "--eventgrid-allow",
    multiple=True,
    metavar="HOST_OR_CIDR",
    help="Let Event Grid deliver to this host name, address or network (10.0.0.0/8) too; "
    "by default webhooks must be on loopback (repeatable).",
)
@click.option("--print-config", is_flag=True, help="Print the effective configuration and exit.")
def serve(print_config: bool, imds_bind: tuple[str, ...], **options: Any) -> None:
    """Run the metadata endpoint and the control API."""
    started = StartTimes.now()
    try:
        config = ServeConfig(imds_bind=tuple(imds_bind), **options)
    except ConfigError as exc:
        fail(str(exc), 2)
    if print_config:
        click.echo(yaml.safe_dump(config.as_dict(), sort_keys=False), nl=False)
        return
    configure_logging(config.log_format, config.log_level)
    freeze_imports()
    if config.workers > 1:
        sys.exit(run_workers(config, scenarios=scenario_runs))
    try:  # nothing is created until every listener is bound
        if config.record is not None:
            check_record_path(config.record)
        prepared = prepare(config)
    except (FabricError, FleetError, StoreError, RecordError) as exc:
        fail(str(exc))
    try:
        listeners = bind_listeners(config, prepared.topology)
    except OSError as exc:
        prepared.close()
        fail(str(exc))
    try:
        runtime = build_runtime(config, prepared=prepared, scenarios=scenario_runs)
    except (FabricError, FleetError, StoreError, RecordError) as exc:
        listeners.close()
        fail(str(exc))

    def ready() -> None:
        for line in banner(runtime, listeners, started):
            click.echo(line)
        sys.stdout.flush()

    run_server(runtime, listeners, ready=ready)
