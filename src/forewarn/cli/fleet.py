"""``forewarn fleet check|init|schema``: write and check fleet files without a server.

Checking builds the whole fleet exactly as ``forewarn serve --fleet`` would (hosts,
domains, addresses), so a file that passes here is a file the server accepts; a mistake
is the same one line, naming the file, the line and the key.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import click
import msgspec

from forewarn.cli.drills import reset
from forewarn.cli.errors import fail
from forewarn.cli.output import Column, print_json, table
from forewarn.fleet import FleetError, Topology, build_topology, load_fleet_file
from forewarn.fleet.loader import EXAMPLE_FLEETS, example_fleet_text, fleet_schema

__all__ = ["FleetSummary", "ScopeSummary", "fleet"]


@click.group()
def fleet() -> None:
    """Write and check fleet files (no server needed); reset a running server's fleet."""


class ScopeSummary(msgspec.Struct):
    """One scope as ``fleet check`` reports it."""

    id: str
    kind: str
    vms: int
    update_domains: int
    fault_domains: int
    hosts: int
    spot: int
    first: str
    last: str


class FleetSummary(msgspec.Struct):
    """What a fleet amounts to: the facts a person checks by eye."""

    scopes: list[ScopeSummary]
    vms: int
    hosts: int
    default_vm: str | None


def _summary(topology: Topology) -> FleetSummary:
    scopes = []
    for scope in topology.scopes.values():
        vms = [topology.vms[name] for name in scope.vm_names]
        scopes.append(
            ScopeSummary(
                id=scope.id,
                kind=scope.kind.value,
                vms=len(vms),
                update_domains=scope.update_domains,
                fault_domains=scope.fault_domains,
                hosts=len({vm.host for vm in vms}),
                spot=sum(vm.spot for vm in vms),
                first=vms[0].name,
                last=vms[-1].name,
            )
        )
    return FleetSummary(scopes, len(topology.vms), len(topology.host_names()), topology.default_vm)


@fleet.command()
@click.argument("file", type=click.Path(dir_okay=True))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--wide", is_flag=True, help="Every column at full width.")
def check(file: str, as_json: bool, wide: bool) -> None:
    """Check FILE as `forewarn serve --fleet FILE` would, and summarise the fleet.

    Exit code 0 when it is valid; otherwise one error line naming the file, the line and
    the key, and exit code 1.
    """
    try:
        topology = build_topology(load_fleet_file(file))
    except FleetError as exc:
        fail(str(exc))
    summary = _summary(topology)
    if as_json:
        print_json(msgspec.to_builtins(summary))
        return
    rows = [
        [
            s.id,
            s.kind,
            str(s.vms),
            "-" if s.kind == "standalone" else str(s.update_domains),  # a lone VM: none
            str(s.hosts),
            f"{s.first} … {s.last}" if s.vms != 1 else s.first,
        ]
        for s in summary.scopes
    ]
    table(
        f"{file}: valid",
        [
            Column("Scope", "key"),
            Column("Kind", optional=1),
            Column("VMs"),
            Column("UDs"),
            Column("Hosts"),
            Column("Names", "phrase"),
        ],
        rows,
        wide=wide,
    )
    kinds = Counter(s.kind for s in summary.scopes)
    click.echo(
        f"{summary.vms} VMs in {len(summary.scopes)} scopes "
        f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}) on "
        f"{summary.hosts} hosts; default VM {summary.default_vm}"
    )


def _examples_help() -> str:
    return "; ".join(f"{name}: {what}" for name, (_, what) in EXAMPLE_FLEETS.items())


@fleet.command()
@click.argument("file", default="fleet.yaml", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--example",
    type=click.Choice(list(EXAMPLE_FLEETS)),
    default="demo",
    help="Which commented example to start from. " + _examples_help() + ".",
)
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
def init(file: str, example: str, force: bool) -> None:
    """Write a commented example fleet to FILE (default fleet.yaml; - for stdout)."""
    text = example_fleet_text(example)
    if file == "-":
        click.echo(text, nl=False)
        return
    path = Path(file)
    if path.exists() and not force:
        fail(f"{file} exists; choose another FILE or add --force to overwrite it")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {file}: {exc.strerror or exc}")
    topology = build_topology(load_fleet_file(path))  # every shipped example loads
    click.echo(
        f"wrote {file}: the {example} example, {len(topology.vms)} VMs in "
        f"{len(topology.scopes)} scopes; check it with `forewarn fleet check {file}`, "
        f"serve it with `forewarn serve --fleet {file}`"
    )


@fleet.command()
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    help="Write the schema to this file instead of stdout.",
)
def schema(output: str) -> None:
    """Print the JSON Schema of fleet files (for editors and validators).

    It is generated from the types that parse fleet files, so it always matches what
    `forewarn serve` accepts. Point an editor at it, e.g. with a first line
    `# yaml-language-server: $schema=fleet.schema.json`.
    """
    text = json.dumps(fleet_schema(), indent=2) + "\n"
    if output == "-":
        click.echo(text, nl=False)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")


fleet.add_command(reset)  # ... and reset a running server's fleet for the next drill
