"""The emulator's click group, ``forewarn.cli.main``: wiring only, no logic of its own.

Each command lives in its own module (``forewarn.cli.COMMANDS``) and is imported only when
it runs (``LazyGroup``).
"""

from __future__ import annotations

import click

from forewarn.cli.commands import COMMANDS
from forewarn.cli.lazy_group import LazyGroup
from forewarn.contract.addresses import DEFAULT_CONTROL_BIND

__all__ = ["main"]

ENV_PREFIX = "FOREWARN"


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
