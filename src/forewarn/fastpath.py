"""The commands a VM runs often, started without click (issue 31).

Loading click is most of the budget a VM command has over ``python -c pass`` (0.1 s), and
the agent daemon would hold it for its whole life. For ``watch``, ``discover``, ``events
--url``, ``approve --url``, ``agent run`` and ``agent status`` this module parses the
arguments with argparse instead, from a table that mirrors the click commands' options
(``tests/vmside/test_fastpath.py`` holds them equal, and runs each command both ways),
and calls what the click command calls (``forewarn.vmcommands``, ``forewarn.agent.
commands``). Anything out of the ordinary goes to click instead, which then says what
it always says: ``--help``, an option or value this table does not take, a value click
would refuse, a ``FOREWARN_<COMMAND>_*`` variable (click's automatic ones), ``events`` and
``approve`` without ``--url`` (the control API's).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple, NoReturn

__all__ = ["COMMANDS", "FastCommand", "Option", "run"]

Kind = Literal["text", "float", "flag", "path"]


class Option(NamedTuple):
    """One option as its click command declares it (a NamedTuple: dataclasses would load
    inspect, a tenth of the budget, for nothing)."""

    flags: tuple[str, ...]
    dest: str
    kind: Kind = "text"
    default: str | float | bool | None = None
    #: Repeatable: the values in a tuple (click's ``multiple=True``).
    multiple: bool = False
    #: The least value click's ``FloatRange(min=...)`` takes.
    minimum: float | None = None
    choices: tuple[str, ...] = ()
    #: The variable click reads when the option is not given.
    envvar: str | None = None


class FastCommand(NamedTuple):
    """A command the fast path starts: its words, options, and what it calls."""

    words: tuple[str, ...]
    options: tuple[Option, ...]
    #: ``module:function``, called with the parsed values by keyword.
    target: str
    #: The dest of a positional taking one or more values (``approve``'s ids), if any.
    arguments: str | None = None
    #: A dest that must be given for this command to be the VM's (``--url``).
    needs: str | None = None
    #: The prefix of click's automatic variables for these options (any set: click).
    auto_env: str | None = None


class _Unusual(Exception):
    """Arguments the fast path leaves to click."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Unusual(message)


_URL = Option(("--url",), "url")
_SOURCE = Option(("--source-address",), "source_address")
_JSON = Option(("--json",), "as_json", "flag", False)
_WIDE = Option(("--wide",), "wide", "flag", False)
_CONFIG = Option(("--config", "-c"), "config_path", "path", envvar="FOREWARN_AGENT_CONFIG")
_STATE = Option(("--state-path",), "state_path")
_API_VERSION = "2020-07-01"  # forewarn.client.DEFAULT_API_VERSION (the test holds it equal)

COMMANDS: tuple[FastCommand, ...] = (
    FastCommand(
        ("watch",),
        (
            _URL,
            Option(("--as-vm",), "as_vm"),
            Option(("--interval",), "interval", "float", 1.0, minimum=0.05),
            _SOURCE,
            Option(("--api-version",), "api_version", default=_API_VERSION),
            _WIDE,
            Option(("--record",), "record_path", "path"),
        ),
        "forewarn.vmcommands:watch_endpoint",
        auto_env="FOREWARN_WATCH_",
    ),
    FastCommand(
        ("discover",),
        (Option(("--lease-file",), "lease_files", "path", multiple=True), _JSON),
        "forewarn.vmcommands:show_discovery",
        auto_env="FOREWARN_DISCOVER_",
    ),
    FastCommand(
        ("events",),
        (_URL, _SOURCE, Option(("--api-version",), "api_version"), _JSON, _WIDE),
        "forewarn.vmcommands:show_endpoint_events",
        needs="url",
        auto_env="FOREWARN_EVENTS_",
    ),
    FastCommand(
        ("approve",),
        (_URL, _SOURCE, Option(("--api-version",), "api_version")),
        "forewarn.vmcommands:approve_on_endpoint",
        arguments="event_ids",
        needs="url",
        auto_env="FOREWARN_APPROVE_",
    ),
    FastCommand(
        ("agent", "status"),
        (_CONFIG, _STATE, _JSON),
        "forewarn.agent.commands:show_status",
        auto_env="FOREWARN_AGENT_STATUS_",
    ),
    FastCommand(
        ("agent", "run"),
        (
            _CONFIG,
            Option(("--vm-name",), "vm_name"),
            Option(("--endpoint",), "endpoint"),
            Option(("--local-address",), "local_address"),
            _STATE,
            Option(("--poll-interval",), "poll_interval", "float"),
            Option(("--metrics-bind",), "metrics_bind"),
            Option(("--dry-run",), "dry_run", "flag"),
            Option(("--log-format",), "log_format", choices=("json", "console")),
            Option(("--log-level",), "log_level", choices=("debug", "info", "warning", "error")),
            Option(("--print-config",), "print_config", "flag", False),
        ),
        "forewarn.agent.commands:run_agent",
    ),
)


def _parser(command: FastCommand) -> _Parser:
    parser = _Parser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for option in command.options:
        if option.kind == "flag":
            parser.add_argument(*option.flags, dest=option.dest, action="store_const",
                                const=True, default=option.default)  # fmt: skip
            continue
        parser.add_argument(
            *option.flags, dest=option.dest, default=[] if option.multiple else None,
            action="append" if option.multiple else "store",
            type=float if option.kind == "float" else str,
            choices=option.choices or None,
        )  # fmt: skip
    if command.arguments:
        parser.add_argument(command.arguments, nargs="+")
    return parser


def _value(option: Option, given: object) -> object:
    """The value click would hand the command, or ``_Unusual`` where click may refuse it."""
    if given is None and option.envvar is not None and option.envvar in os.environ:
        given = os.environ[option.envvar] or None
        if given is None:
            raise _Unusual(f"{option.envvar} is empty")  # click's to say what that means
    if option.multiple:
        assert isinstance(given, list)
        values = tuple(given)
    else:
        values = () if given is None else (given,)
    for value in values:
        if option.kind == "path" and os.path.isdir(str(value)):
            raise _Unusual(f"{value} is a directory")  # click's Path(dir_okay=False) says so
        if option.minimum is not None and not float(str(value)) >= option.minimum:
            raise _Unusual(f"{value} is under {option.minimum}")
    if option.multiple:
        return values
    return option.default if given is None else given


def parse(command: FastCommand, args: Sequence[str]) -> dict[str, object]:
    """The keyword arguments of ``command``'s target, or ``_Unusual``."""
    namespace = vars(_parser(command).parse_args(list(args)))
    values = {o.dest: _value(o, namespace[o.dest]) for o in command.options}
    if command.arguments:
        values[command.arguments] = tuple(namespace[command.arguments])
    if command.needs is not None and values[command.needs] is None:
        raise _Unusual(f"no {command.needs}")
    return values


def _match(argv: Sequence[str]) -> FastCommand | None:
    for command in COMMANDS:
        if tuple(argv[: len(command.words)]) == command.words:
            return command
    return None


def _ordinary(command: FastCommand, args: Sequence[str]) -> bool:
    """Whether ``args`` ask nothing of click: no help, no automatic variable of click's."""
    asked = args[: args.index("--")] if "--" in args else args
    if "--help" in asked or "-h" in asked:
        return False
    prefix = command.auto_env
    return prefix is None or not any(name.startswith(prefix) for name in os.environ)


def _target(command: FastCommand) -> Callable[..., None]:
    from importlib import import_module

    module, _, name = command.target.partition(":")
    function: Callable[..., None] = getattr(import_module(module), name)
    return function


def run(argv: Sequence[str]) -> bool:
    """Run ``argv`` here if it is one of ``COMMANDS`` and ordinary; False: click's to run.

    A failure ends as click's would (``forewarn.exits``)."""
    command = _match(argv)
    if command is None:
        return False
    args = argv[len(command.words) :]
    if not _ordinary(command, args):
        return False
    try:
        values = parse(command, args)
    except (_Unusual, argparse.ArgumentError):  # the latter: exit_on_error=False's
        return False
    from forewarn.exits import CommandError, fail

    try:
        _target(command)(**values)
    except CommandError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        fail("aborted")
    return True
