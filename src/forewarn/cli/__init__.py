"""The ``forewarn`` command: wiring only, no logic of its own.

Errors a user can make end as one line on stderr and a non-zero exit, never a traceback.
Each command group lives in its own module and is registered here with ``add_command``.
"""

from __future__ import annotations

import click

from forewarn import __version__
from forewarn.agent.cli import agent
from forewarn.cli.control import COMMANDS as CONTROL_COMMANDS
from forewarn.cli.drills import fault, reset
from forewarn.cli.errors import OneLineErrors
from forewarn.cli.fleet import fleet
from forewarn.cli.replay import replay
from forewarn.cli.report import report
from forewarn.cli.scenario import scenario
from forewarn.cli.serve import serve
from forewarn.cli.status import status
from forewarn.server.config import DEFAULT_CONTROL_BIND
from forewarn.vmcli import VM_COMMANDS, with_endpoint_url

__all__ = ["main"]

ENV_PREFIX = "FOREWARN"


@click.group(
    cls=OneLineErrors,
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


main.add_command(serve)
main.add_command(status)  # who leads a scaled-out fleet
main.add_command(agent)
main.add_command(fleet)  # write and check fleet files
fleet.add_command(reset)  # ... and reset a running server's fleet for the next drill
main.add_command(fault)  # make the metadata endpoint fail like the real one
main.add_command(replay)  # serve recorded documents again
main.add_command(scenario)  # play platform behaviour against a server
main.add_command(report)  # how the fleet reacted: a verdict per event and VM
for _command in CONTROL_COMMANDS:
    main.add_command(with_endpoint_url(_command))  # events/approve --url: a metadata endpoint
for _command in VM_COMMANDS:
    main.add_command(_command)
