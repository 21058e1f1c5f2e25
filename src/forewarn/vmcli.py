"""The VM commands as click commands: ``forewarn watch``, ``forewarn discover``, and
``--url`` for ``forewarn events`` / ``forewarn approve``: their options, help and the docs'
reference. What they do is ``forewarn.vmcommands`` (click-free: ``forewarn.fastpath``
runs the same commands without loading click, and holds its options equal to these).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from forewarn.client import DEFAULT_API_VERSION
from forewarn.vmcommands import (
    approve_on_endpoint,
    show_discovery,
    show_endpoint_events,
    watch_endpoint,
)

__all__ = ["VM_COMMANDS", "discover_command", "watch", "with_endpoint_url"]


_URL_HELP = "Ask this metadata endpoint (e.g. http://169.254.169.254) instead of the control API."
_SOURCE_HELP = "Bind this source address (speak as one VM of a forewarn fleet)."


def _endpoint_params() -> list[click.Parameter]:
    return [
        click.Option(["--url"], default=None, help=_URL_HELP),
        click.Option(["--source-address"], default=None, help=_SOURCE_HELP + " With --url."),
    ]


def _events_with_url(control: click.Command) -> click.Command:
    original = control.callback
    assert original is not None

    def callback(url: str | None, source_address: str | None, **options: Any) -> None:
        if url is None:
            if source_address is not None:
                raise click.UsageError("--source-address needs --url")
            original(**options)
            return
        if options.get("as_vm") is not None:
            raise click.UsageError(
                "--as asks the control API; with --url the endpoint answers for the VM "
                "asking (choose it with --source-address)"
            )
        show_endpoint_events(url, options.get("api_version"), bool(options.get("as_json")),
                             source_address, bool(options.get("wide")))  # fmt: skip

    return click.Command(
        control.name, params=[*control.params, *_endpoint_params()], callback=callback,
        help=(control.help or "") + "\n\nWith --url, the document from a metadata endpoint.",
        short_help=control.short_help, context_settings=control.context_settings,
    )  # fmt: skip


def _approve_with_url(control: click.Command) -> click.Command:
    original = control.callback
    assert original is not None
    ids = click.Argument(["event_ids"], nargs=-1, required=True, metavar="EVENT_ID...")

    def callback(
        url: str | None, source_address: str | None, api_version: str | None,
        event_ids: tuple[str, ...],
    ) -> None:  # fmt: skip
        if url is None:
            if source_address is not None or api_version is not None:
                raise click.UsageError("--source-address and --api-version need --url")
            for event_id in event_ids:
                original(event_id=event_id)
            return
        approve_on_endpoint(url, event_ids, api_version, source_address)

    version = click.Option(["--api-version"], default=None,
                           help=f"With --url (default {DEFAULT_API_VERSION}).")  # fmt: skip
    return click.Command(
        control.name, params=[ids, *_endpoint_params(), version], callback=callback,
        help="Approve EVENT_ID... as the operator (control API), or with --url as this VM, "
        "on a metadata endpoint (several ids in one request).",
    )  # fmt: skip


_VARIANTS: dict[str, Callable[[click.Command], click.Command]] = {
    "events": _events_with_url,
    "approve": _approve_with_url,
}


def with_endpoint_url(command: click.Command) -> click.Command:
    """``events`` and ``approve`` gain ``--url`` (the metadata endpoint); others unchanged."""
    variant = _VARIANTS.get(command.name or "")
    return command if variant is None else variant(command)


# ---------------------------------------------------------------- watch


@click.command()
@click.option("--url", default=None,
              help="Metadata endpoint (default: $FOREWARN_IMDS_URL, $SCHEDULEDEVENTSIP, "
              "http://169.254.169.254).")  # fmt: skip
@click.option("--as-vm", default=None,
              help="Highlight this VM's events (default: the instance's name).")  # fmt: skip
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0,
              help="Seconds between polls.")  # fmt: skip
@click.option("--source-address", default=None, help=_SOURCE_HELP)
@click.option("--api-version", default=DEFAULT_API_VERSION)
@click.option("--wide", is_flag=True,
              help="Every column at full width, whatever the terminal's width.")  # fmt: skip
@click.option("--record", "record_path", type=click.Path(dir_okay=False), default=None,
              help="Append each new document to FILE (what `forewarn replay` plays).")  # fmt: skip
def watch(
    url: str | None, as_vm: str | None, interval: float, source_address: str | None,
    api_version: str, wide: bool, record_path: str | None,
) -> None:  # fmt: skip
    """Watch the Scheduled Events document live: changes as they happen, countdowns.

    On a terminal, a live table (this VM's events highlighted); otherwise one line per
    change, for logs and scripts. Ctrl-C stops.
    """
    watch_endpoint(url, as_vm, interval, source_address, api_version, wide, record_path)


@click.command(name="discover")
@click.option("--lease-file", "lease_files", multiple=True, type=click.Path(dir_okay=False),
              help="Read these DHCP lease files instead of the system's (repeatable).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def discover_command(lease_files: tuple[str, ...], as_json: bool) -> None:
    """Find the metadata endpoint as Azure's articles do (variables, DHCP option 245)."""
    show_discovery(lease_files, as_json)


VM_COMMANDS: tuple[click.Command, ...] = (watch, discover_command)
