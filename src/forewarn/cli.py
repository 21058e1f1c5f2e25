"""The ``forewarn`` command: wiring only, no logic of its own.

Errors a user can make end as one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NoReturn

import click
import httpx
import msgspec
import yaml
from rich.console import Console
from rich.table import Table

from . import __version__
from .contract import SUPPORTED_VERSIONS
from .fabric import FabricError, OperationKind, YamlError, read_yaml
from .server import (
    ConfigError,
    ServeConfig,
    banner,
    build_runtime,
    configure_logging,
    open_listeners,
    run_server,
)
from .server.config import DEFAULT_CONTROL_BIND, DEFAULT_IMDS_BIND
from .store import StoreError

__all__ = ["main"]

ENV_PREFIX = "FOREWARN"


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse nan and inf, which no duration can be."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds")
    return value


def _fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"forewarn: error: {message}", err=True)
    sys.exit(code)


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


class _OneLineErrors(click.Group):
    """Usage mistakes end as one ``forewarn: error:`` line, like every other error."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.UsageError as exc:
            _fail(exc.format_message(), exc.exit_code)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except click.Abort:
            _fail("aborted")
        sys.exit(code if isinstance(code, int) else 0)


@click.group(
    cls=_OneLineErrors,
    context_settings={"auto_envvar_prefix": ENV_PREFIX, "show_default": True},
)
@click.version_option(__version__, prog_name="forewarn")
@click.option(
    "--control",
    "control_url",
    envvar="FOREWARN_CONTROL",
    default=f"http://{DEFAULT_CONTROL_BIND}",
    help="Control API of a running server (for every command but serve).",
)
@click.option(
    "--token", envvar="FOREWARN_TOKEN", default=None, help="Bearer token of the control API."
)
@click.pass_context
def main(ctx: click.Context, control_url: str, token: str | None) -> None:
    """forewarn: Azure Scheduled Events, runnable anywhere."""
    ctx.obj = {"control": control_url.rstrip("/"), "token": token}


@main.command()
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
    "--clock",
    type=click.Choice(["real", "virtual"]),
    default="real",
    help="virtual: time moves only via the control API (clock/advance).",
)
@click.option(
    "--time-scale",
    type=float,
    default=1.0,
    help="Divide every platform duration by this (60: a Reboot gets 15 s notice).",
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
    "--per-vm-ports/--no-per-vm-ports",
    default=True,
    help="Also listen on each VM's dedicated port from the fleet file.",
)
@click.option(
    "--rate-limit", type=float, default=5.0, help="Requests per second per VM before 429 (0: off)."
)
@click.option(
    "--first-call-delay",
    type=float,
    default=0.0,
    help="Seconds the first request of a scope waits (Azure: up to 120).",
)
@click.option(
    "--enablement",
    type=click.Choice(["on-first-request", "always"]),
    default="on-first-request",
    help="When a scope's Scheduled Events are on (Azure: after its first request).",
)
@click.option("--log-format", type=click.Choice(["console", "json"]), default="console")
@click.option("--print-config", is_flag=True, help="Print the effective configuration and exit.")
def serve(print_config: bool, imds_bind: tuple[str, ...], **options: Any) -> None:
    """Run the metadata endpoint and the control API."""
    try:
        config = ServeConfig(imds_bind=tuple(imds_bind), **options)
    except ConfigError as exc:
        _fail(str(exc), 2)
    if print_config:
        click.echo(yaml.safe_dump(config.as_dict(), sort_keys=False), nl=False)
        return
    configure_logging(config.log_format)
    try:
        runtime = build_runtime(config)
    except (FabricError, StoreError) as exc:
        _fail(str(exc))
    try:
        listeners = open_listeners(runtime)
    except OSError as exc:
        runtime.close()
        _fail(str(exc))

    def ready() -> None:
        for line in banner(runtime, listeners):
            click.echo(line)
        sys.stdout.flush()

    run_server(runtime, listeners, ready=ready)


class _Api:
    """A tiny client of the control API for the CLI's commands."""

    def __init__(self, ctx: click.Context) -> None:
        obj = ctx.find_root().obj
        self.base = obj["control"]
        headers = {"Authorization": f"Bearer {obj['token']}"} if obj["token"] else {}
        self._client = httpx.Client(
            base_url=self.base, headers=headers, timeout=30, trust_env=False
        )

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            _fail(
                f"cannot reach the control API at {self.base} ({exc}); is `forewarn serve` running?"
            )
        if response.status_code >= 400:
            try:
                message = response.json().get("error", response.text)
            except ValueError:
                message = response.text
            if response.status_code == 404 and message == "Not found":
                _fail(f"{self.base} is not a forewarn control API (the metadata endpoint?)")
            _fail(f"{message} (HTTP {response.status_code})")
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))


@main.command(
    help="Start OPERATION on TARGET (a VM, a host, or a scope to walk its update domains).\n\n"
    "OPERATION is one of: " + ", ".join(k.value for k in OperationKind) + "."
)
@click.argument(
    "operation", metavar="OPERATION", type=click.Choice([k.value for k in OperationKind])
)
@click.argument("target")
@click.option(
    "--notice",
    type=float,
    default=None,
    callback=_finite,
    help="Notice in seconds (default: minimum).",
)
@click.option("--description", default=None, help="Description shown in the event.")
@click.option("--duration", type=int, default=None, help="DurationInSeconds shown in the event.")
@click.option("--json", "as_json", is_flag=True, help="Print the operation as JSON.")
@click.pass_context
def trigger(
    ctx: click.Context,
    operation: str,
    target: str,
    notice: float | None,
    description: str | None,
    duration: int | None,
    as_json: bool,
) -> None:
    """Start OPERATION on TARGET (a VM, a host, or a scope to walk its update domains)."""
    body = {
        "kind": operation,
        "target": target,
        "notice_seconds": notice,
        "description": description,
        "duration_seconds": duration,
    }
    op = _Api(ctx).call(
        "POST", "/api/v1/operations", json={k: v for k, v in body.items() if v is not None}
    )
    if as_json:
        _print_json(op)
        return
    click.echo(
        f"{op['id']}: {op['kind']} on {op['target']} ({op['state']}), "
        f"NotBefore {_when(op['not_before'])} UTC, events {', '.join(op['event_ids']) or 'none'}"
    )
    if op["unnotified"]:
        click.echo(
            f"  no notice for {', '.join(op['unnotified'])}: Scheduled Events are off in their "
            "scope (no request from it yet, or terminate notifications disabled)"
        )


@main.command()
@click.option("--as", "as_vm", default=None, help="Show the document this VM gets.")
@click.option("--api-version", default=None, help=f"With --as (default {SUPPORTED_VERSIONS[-1]}).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def events(ctx: click.Context, as_vm: str | None, api_version: str | None, as_json: bool) -> None:
    """List live events (or, with --as, the document one VM sees)."""
    if api_version is not None and as_vm is None:
        raise click.UsageError("--api-version needs --as VM (it picks how that VM sees events)")
    api = _Api(ctx)
    if as_vm is not None:
        document = api.call(
            "GET",
            f"/api/v1/documents/{as_vm}",
            params={"api-version": api_version or SUPPORTED_VERSIONS[-1]},
        )
        if as_json:
            _print_json(document)
            return
        _table(
            f"{as_vm}: DocumentIncarnation {document['DocumentIncarnation']}",
            ["EventId", "Status", "Type", "Resources", "NotBefore"],
            [
                [
                    e["EventId"],
                    e["EventStatus"],
                    e["EventType"],
                    ", ".join(e["Resources"]),
                    e["NotBefore"] or "-",
                ]
                for e in document["Events"]
            ],
        )
        return
    listing = api.call("GET", "/api/v1/events")
    if as_json:
        _print_json(listing)
        return
    _table(
        "Live events",
        ["Id", "Scope", "Status", "Type", "Resources", "NotBefore", "Approved"],
        [
            [
                e["id"],
                e["scope"],
                e["status"],
                e["type"],
                ", ".join(e["resources"]),
                _when(e["not_before"]),
                e["approved_by"] or "-",
            ]
            for e in listing
        ],
    )


def _table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    table = Table(title=title)
    for column in columns:
        if column.lower() in ("id", "eventid", "event"):
            table.add_column(column, no_wrap=True, min_width=36)  # ids must stay copyable
        elif column.lower() in ("resources", "detail", "vm"):
            table.add_column(column, overflow="fold")
        else:
            table.add_column(column, no_wrap=True)  # short words stay whole
    for row in rows:
        table.add_row(*[str(c) for c in row])
    Console().print(table)


def _event_command(action: str, help_text: str) -> Callable[..., None]:
    @click.argument("event_id")
    @click.pass_context
    def command(ctx: click.Context, event_id: str) -> None:
        result = _Api(ctx).call("POST", f"/api/v1/events/{event_id}/{action}")
        click.echo(f"{result['id']}: {result['status']}")

    command.__doc__ = help_text
    return main.command(name=action)(command)


_event_command("approve", "Approve EVENT_ID as the operator (it starts when all are approved).")
_event_command("start", "Start EVENT_ID's operation now.")
_event_command("cancel", "Cancel a Scheduled EVENT_ID (no impact).")
_event_command("complete", "End a Started EVENT_ID now.")


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("seconds", type=float, callback=_finite)
@click.pass_context
def advance(ctx: click.Context, seconds: float) -> None:
    """Advance a virtual clock by SECONDS, firing every timer that comes due."""
    clock = _Api(ctx).call("POST", "/api/v1/clock/advance", json={"seconds": seconds})
    click.echo(f"clock: {clock['iso']}")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def topology(ctx: click.Context, as_json: bool) -> None:
    """Scopes and VMs of the running server."""
    data = _Api(ctx).call("GET", "/api/v1/topology")
    if as_json:
        _print_json(data)
        return
    rows = [
        [
            vm["name"],
            s["id"],
            s["kind"],
            vm["host"],
            str(vm["update_domain"]),
            str(vm["fault_domain"]),
            vm["address"],
            vm["status"],
        ]
        for s in data["scopes"]
        for vm in s["vms"]
    ]
    _table("Fleet", ["VM", "Scope", "Kind", "Host", "UD", "FD", "Address", "Status"], rows)


@main.command()
@click.option("--limit", type=int, default=50)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def history(ctx: click.Context, limit: int, as_json: bool) -> None:
    """The append-only history of every transition."""
    entries = _Api(ctx).call("GET", "/api/v1/history", params={"last": limit})
    if as_json:
        _print_json(entries)
        return
    _table(
        "History",
        ["#", "At (UTC)", "Kind", "Scope", "Event", "Detail"],
        [
            [
                str(h["seq"]),
                _when(h["at"]),
                h["kind"],
                h["scope_id"] or "-",
                h["event_id"] or "-",
                msgspec.json.encode(h["detail"]).decode(),
            ]
            for h in entries
        ],
    )


if __name__ == "__main__":  # pragma: no cover
    main(prog_name=os.path.basename(sys.argv[0]))
