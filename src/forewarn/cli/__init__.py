"""The ``forewarn`` command: wiring only, no logic of its own.

Errors a user can make end as one line on stderr and a non-zero exit, never a traceback.
Each command lives in its own module, named below and imported only when it runs
(``LazyGroup``): the VM commands, the agent and the control-API commands load nothing of
the emulator and need only the VM install (``pip install forewarn``); the emulator's need
``forewarn[server]``.
"""

from __future__ import annotations

import click

from forewarn.cli.lazy_group import LazyCommand, LazyGroup
from forewarn.contract.addresses import DEFAULT_CONTROL_BIND

__all__ = ["COMMANDS", "main"]

ENV_PREFIX = "FOREWARN"

_SERVER = "server"  # the extra the emulator's commands need

#: Every command: where it lives and the summary ``forewarn --help`` lists it with.
COMMANDS: dict[str, LazyCommand] = {
    "serve": LazyCommand(
        "forewarn.cli.serve:serve",
        "Run the metadata endpoint and the control API.",
        extra=_SERVER,
    ),
    # who leads a scaled-out fleet
    "status": LazyCommand(
        "forewarn.cli.status:status",
        "Who leads a scaled-out fleet, and each process's replication lag.",
    ),
    "agent": LazyCommand(
        "forewarn.agent.cli:agent",
        "The VM-side daemon: react to scheduled events, approve safely, recover.",
    ),
    # write and check fleet files
    "fleet": LazyCommand(
        "forewarn.cli.fleet:fleet",
        "Write and check fleet files (no server needed); reset a running server's fleet.",
        extra=_SERVER,
    ),
    # serve recorded documents again
    "replay": LazyCommand(
        "forewarn.cli.replay:replay",
        "Serve a recorded (`forewarn serve --record`) or captured sequence of documents to "
        "one VM, on a metadata endpoint, with the original timing divided by --time-scale.",
        extra=_SERVER,
    ),
    # play platform behaviour against a server
    "scenario": LazyCommand(
        "forewarn.cli.scenario:scenario",
        "Play named platform behaviour or scenario files against a running server.",
        extra=_SERVER,
    ),
    # how the fleet reacted: a verdict per event and VM
    "report": LazyCommand(
        "forewarn.cli.report:report",
        "How the fleet reacted: each operation rolled up (VMs hit with no notice first), "
        "the VMs that failed first, each event (who saw it when, who approved it before "
        "NotBefore, who missed it), who never or no longer polls, approvals by VMs not listed.",
        extra=_SERVER,
    ),
    "trigger": LazyCommand(
        "forewarn.cli.trigger:trigger",
        "Start OPERATION on TARGET (a VM, a host, or a scope to walk its update domains).",
        extra=_SERVER,
    ),
    # events/approve --url: a metadata endpoint instead of the control API
    "events": LazyCommand(
        "forewarn.cli.control:events",
        "List live events (or, with --as, the document one VM sees).",
        wrap="forewarn.vmcli:with_endpoint_url",
    ),
    "approve": LazyCommand(
        "forewarn.cli.control:approve",
        "Approve EVENT_ID... as the operator (control API), or with --url as this VM, on a "
        "metadata endpoint (several ids in one request).",
        wrap="forewarn.vmcli:with_endpoint_url",
    ),
    "start": LazyCommand("forewarn.cli.control:start", "Start EVENT_ID's operation now."),
    "cancel": LazyCommand(
        "forewarn.cli.control:cancel", "Cancel a Scheduled EVENT_ID (no impact)."
    ),
    "complete": LazyCommand("forewarn.cli.control:complete", "End a Started EVENT_ID now."),
    "advance": LazyCommand(
        "forewarn.cli.control:advance",
        "Advance a virtual clock by SECONDS of its own (90, 90s, 5m, 1h, PT5M), firing every "
        "timer that comes due.",
    ),
    "topology": LazyCommand(
        "forewarn.cli.control:topology", "Scopes and VMs of the running server."
    ),
    "history": LazyCommand(
        "forewarn.cli.control:history",
        "The append-only history of every transition, newest last.",
    ),
    # make the metadata endpoint fail like the real one
    "fault": LazyCommand(
        "forewarn.cli.drills:fault",
        "Make the metadata endpoint fail like the real one: error statuses, latency, "
        "time-outs, connection resets, a co-tenant eating the rate budget.",
    ),
    # any program, unmodified, as a VM: the real address, the VM's host name
    "exec": LazyCommand(
        "forewarn.cli.vmexec:exec_command",
        "Run COMMAND as VM NAME: 169.254.169.254 answers as that VM, the host name is its own.",
    ),
    "watch": LazyCommand(
        "forewarn.vmcli:watch",
        "Watch the Scheduled Events document live: changes as they happen, countdowns.",
    ),
    "discover": LazyCommand(
        "forewarn.vmcli:discover_command",
        "Find the metadata endpoint as Azure's articles do (variables, DHCP option 245).",
    ),
    "conformance": LazyCommand(
        "forewarn.conformance.command:conformance",
        "Check a metadata endpoint against forewarn's wire contract, rule by rule.",
    ),
}


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--version`` as click prints it, from the wheel's metadata file (``forewarn.
    __version__``): click's own option asks importlib.metadata, half this command's time."""
    if not value or ctx.resilient_parsing:
        return
    import forewarn

    click.echo(f"forewarn, version {forewarn.__version__}")
    ctx.exit()


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"auto_envvar_prefix": ENV_PREFIX, "show_default": True},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version and exit.",
)
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
    from_env = click.core.ParameterSource.ENVIRONMENT
    ctx.obj = {
        "control": control_url,
        "control_origin": (
            "FOREWARN_CONTROL" if ctx.get_parameter_source("control_url") == from_env
            else "--control"
        ),
        "token": token,
        "token_origin": (
            "FOREWARN_TOKEN" if ctx.get_parameter_source("token") == from_env else "--token"
        ),
    }  # fmt: skip
