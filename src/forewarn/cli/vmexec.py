"""``forewarn exec --vm NAME -- COMMAND``: COMMAND as VM NAME, unmodified (``forewarn.
vmexec``): the real address, the VM's host name, the host's loopback ports it is given."""

from __future__ import annotations

import click

from forewarn.cli.api import control_client
from forewarn.contract.addresses import DEFAULT_IMDS_BIND

__all__ = ["exec_command"]


def _forwards(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> object:
    from forewarn.vmexec import parse_forward

    try:
        return tuple(parse_forward(text) for text in value)
    except ValueError as exc:
        raise click.BadParameter(str(exc).removeprefix("--forward ")) from None


@click.command(
    "exec",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
@click.option("--vm", required=True, help="The VM of the fleet COMMAND runs as.")
@click.option(
    "--endpoint",
    envvar=["FOREWARN_EXEC_ENDPOINT", "FOREWARN_IMDS_URL"],
    default=f"http://{DEFAULT_IMDS_BIND}",
    help="The metadata endpoint of the server whose control API --control names "
    "(also $FOREWARN_EXEC_ENDPOINT, $FOREWARN_IMDS_URL).",
)
@click.option(
    "--forward",
    "forwards",
    multiple=True,
    metavar="[HOST:]PORT",
    callback=_forwards,
    help="A port of the host's loopback, reachable at the same address inside "
    "(repeatable; HOST default 127.0.0.1).",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def exec_command(
    ctx: click.Context,
    vm: str,
    endpoint: str,
    forwards: tuple[object, ...],
    command: tuple[str, ...],
) -> None:
    """Run COMMAND as VM NAME: 169.254.169.254 answers as that VM, the host name is its own.

    COMMAND gets its own network namespace (and UTS, mount, PID: a user namespace when
    not root), where 169.254.169.254:80 is the metadata endpoint as VM NAME, relayed byte
    for byte; its host name is the VM's computer name (the one /metadata/instance
    reports); only the --forward ports of the host's loopback are reachable. A cloud
    service's role instance (no virtual network) also finds the endpoint through DHCP
    option 245 in its lease file. COMMAND's environment is yours without
    FOREWARN_IMDS_URL and SCHEDULEDEVENTSIP; its exit status is this command's.
    """
    from forewarn.vmexec import ExecError, Forward, find_vm, run

    try:
        with control_client(ctx) as api:
            target = find_vm(api, vm, endpoint)
        code = run(target, command, forwards=[f for f in forwards if isinstance(f, Forward)])
    except ExecError as exc:
        raise click.ClickException(str(exc)) from None
    ctx.exit(code)
