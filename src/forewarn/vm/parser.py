"""The VM commands' one way in: an argparse parser each (``watch``, ``discover``, ``events
--url``, ``approve --url``, ``conformance``, ``agent run | check-config | status``).

``forewarn`` (``forewarn.script``) hands these commands here and the rest to the
emulator's click group; the docs' reference of the VM commands is written from these
parsers. Each command imports what it runs when it runs. A usage mistake is one
``forewarn: error:`` message and exit status 2 (``forewarn agent: error:`` for the
agent's), as every other error of a command.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from forewarn.vm.exits import USAGE, CommandError, UsageProblem, closed_pipe, fail

__all__ = ["ENDPOINT_OPTIONS", "VM_COMMANDS", "build", "main"]

#: The commands of the VM wing, whatever their options.
VM_COMMANDS = ("watch", "discover", "conformance", "agent")
#: ``events`` and ``approve`` are the VM's with one of these (the endpoint's), else the
#: control API's (the emulator's click group).
ENDPOINT_OPTIONS = {
    "events": ("--url", "--source-address"),
    "approve": ("--url", "--source-address", "--api-version"),
}

_URL_HELP = "Ask this metadata endpoint (e.g. http://169.254.169.254) instead of the control API."
_SOURCE_HELP = "Bind this source address (speak as one VM of a forewarn fleet)."
_WIDE_HELP = "Every column at full width, whatever the terminal's width."
_CONFIG_HELP = "TOML configuration file (env FOREWARN_AGENT_CONFIG)."


class _Parser(argparse.ArgumentParser):
    """A usage mistake ends as every error does: one message, exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageProblem(message)


def _at_least(
    low: float, *, above: bool = False, high: float | None = None
) -> Callable[[str], float]:
    """A float option's type: ``low`` or more (more than ``low`` if ``above``), at most
    ``high``."""
    low_text = f"x>{low:g}" if above else f"x>={low:g}"
    bounds = low_text if high is None else f"{low:g}<=x<={high:g}"

    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (value > low if above else value >= low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{text} is not in the range {bounds}")
        return value

    number.__name__ = "number"
    return number


def _file(text: str) -> str:
    """A file option's type: a path that is not a directory (it may not exist yet)."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory")
    return text


def _command(
    parent: Any,
    name: str,
    summary: str,
    description: str = "",
    run: Callable[..., None] | None = None,
) -> _Parser:
    parser: _Parser = parent.add_parser(
        name, help=summary, description=f"{summary}\n\n{description}".strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
    )  # fmt: skip
    if run is not None:
        parser.set_defaults(run=run)
    return parser


# ------------------------------------------------------------------ what each command runs


def _watch(a: argparse.Namespace) -> None:
    from forewarn.vm.endpoint import watch_endpoint

    watch_endpoint(a.url, a.as_vm, a.interval, a.source_address, a.api_version, a.wide,
                   a.record_path)  # fmt: skip


def _discover(a: argparse.Namespace) -> None:
    from forewarn.vm.endpoint import show_discovery

    show_discovery(tuple(a.lease_files), a.as_json)


def _events(a: argparse.Namespace) -> None:
    if a.url is None:
        raise UsageProblem("--source-address needs --url")
    if a.as_vm is not None:
        raise UsageProblem(
            "--as asks the control API; with --url the endpoint answers for the VM asking "
            "(choose it with --source-address)"
        )
    from forewarn.vm.endpoint import show_endpoint_events

    show_endpoint_events(a.url, a.api_version, a.as_json, a.source_address, a.wide)


def _approve(a: argparse.Namespace) -> None:
    if a.url is None:
        raise UsageProblem("--source-address and --api-version need --url")
    from forewarn.vm.endpoint import approve_on_endpoint

    approve_on_endpoint(a.url, tuple(a.event_ids), a.api_version, a.source_address)


def _conformance(a: argparse.Namespace) -> None:
    from forewarn.conformance.command import conformance

    options = {k: v for k, v in vars(a).items() if k != "run"}
    conformance(**options)


def _agent_run(a: argparse.Namespace) -> None:
    from forewarn.agent.commands import run_agent

    flags = {k: v for k, v in vars(a).items() if k not in ("run", "config_path", "print_config")}
    run_agent(a.config_path, a.print_config, **flags)


def _agent_check(a: argparse.Namespace) -> None:
    from forewarn.agent.commands import agent_fail, check_config

    if a.config_path is None:
        agent_fail("--config (or FOREWARN_AGENT_CONFIG) is required", USAGE)
    check_config(a.config_path, a.quiet, a.skip_programs)


def _agent_status(a: argparse.Namespace) -> None:
    from forewarn.agent.commands import show_status

    show_status(a.config_path, a.state_path, a.as_json)


# ------------------------------------------------------------------ the parsers


def _endpoint_commands(commands: Any) -> None:
    watch = _command(
        commands, "watch",
        "Watch the Scheduled Events document live: changes as they happen, countdowns.",
        "On a terminal, a live table (this VM's events highlighted); otherwise one line per\n"
        "change, for logs and scripts. Ctrl-C stops.", _watch,
    )  # fmt: skip
    watch.add_argument("--url", help="Metadata endpoint (default: $FOREWARN_IMDS_URL, "
                       "$SCHEDULEDEVENTSIP, http://169.254.169.254).")  # fmt: skip
    watch.add_argument("--as-vm", metavar="VM",
                       help="Highlight this VM's events (default: the instance's).")  # fmt: skip
    watch.add_argument("--interval", type=_at_least(0.05), default=1.0, metavar="SECONDS",
                       help="Seconds between polls (default 1).")  # fmt: skip
    watch.add_argument("--source-address", help=_SOURCE_HELP)
    watch.add_argument("--api-version", help="The api-version to ask for (default 2020-07-01).")
    watch.add_argument("--wide", action="store_true", help=_WIDE_HELP)
    watch.add_argument("--record", dest="record_path", type=_file, metavar="FILE",
                       help="Append each new document to FILE (`forewarn replay`).")  # fmt: skip

    discover = _command(
        commands, "discover",
        "Find the metadata endpoint as Azure's articles do (variables, DHCP option 245).",
        run=_discover,
    )  # fmt: skip
    discover.add_argument("--lease-file", dest="lease_files", action="append", default=[],
                          type=_file, metavar="FILE", help="Read these DHCP lease files "
                          "instead of the system's (repeatable).")  # fmt: skip
    discover.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")

    events = _command(
        commands, "events", "With --url, the document this VM gets from a metadata endpoint.",
        "Without --url, `forewarn events` lists a running server's live events through its\n"
        "control API (an emulator command).", _events,
    )  # fmt: skip
    events.add_argument("--url", help=_URL_HELP)
    events.add_argument("--source-address", help=_SOURCE_HELP)
    events.add_argument("--api-version", help="The api-version to ask for (default 2020-07-01).")
    events.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")
    events.add_argument("--wide", action="store_true", help=_WIDE_HELP)
    events.add_argument("--as", dest="as_vm", help=argparse.SUPPRESS)  # the control API's

    approve = _command(
        commands, "approve",
        "With --url, approve EVENT_ID... as this VM on a metadata endpoint (one request).",
        "The ids must be in the document the endpoint shows this VM. Without --url,\n"
        "`forewarn approve` approves as the operator through the control API (an emulator\n"
        "command).", _approve,
    )  # fmt: skip
    approve.add_argument("event_ids", nargs="+", metavar="EVENT_ID")
    approve.add_argument("--url", help=_URL_HELP)
    approve.add_argument("--source-address", help=_SOURCE_HELP)
    approve.add_argument("--api-version", help="The api-version to ask for (default 2020-07-01).")


def _conformance_command(commands: Any) -> None:
    kit = _command(
        commands, "conformance",
        "Check a metadata endpoint against forewarn's wire contract, rule by rule.",
        "URL defaults to $FOREWARN_IMDS_URL, $SCHEDULEDEVENTSIP, then http://169.254.169.254.\n"
        "Non-destructive: GETs, and POSTs that approve nothing (unless --follow --approve).\n"
        "One line per rule (PASS, FAIL with what was expected and seen, SKIP with why);\n"
        "the exit status is 1 when a rule fails.", _conformance,
    )  # fmt: skip
    add = kit.add_argument
    add("url", nargs="?", metavar="URL", help="The metadata endpoint.")
    add("--source-address", help=_SOURCE_HELP)
    add("--json", dest="as_json", action="store_true", help="Print the report as JSON.")
    add("--junit", dest="junit_path", type=_file, metavar="FILE",
        help="Also write the results as JUnit XML to FILE.")  # fmt: skip
    add("--record", dest="record_path", type=_file, metavar="FILE",
        help="Write every request and answer to FILE (JSON lines: `forewarn replay`).")  # fmt: skip
    add("--follow", action="store_true",
        help="Then wait for an event and follow it to its end (lifecycle rules).")  # fmt: skip
    add("--approve", action="store_true",
        help="With --follow: approve the Scheduled events that list this VM.")  # fmt: skip
    add("--timeout", type=_at_least(0, above=True), default=3600.0, metavar="SECONDS",
        help="With --follow: seconds to wait for events and follow them (default 3600).",
    )  # fmt: skip
    add("--interval", type=_at_least(0.2), default=1.0, metavar="SECONDS",
        help="With --follow: seconds between polls (default 1, as the articles say).")  # fmt: skip
    add("--time-scale", type=_at_least(0, above=True), default=1.0, metavar="N",
        help="The endpoint is `forewarn serve --time-scale N`: divide the contract's "
        "durations by N (default 1).")  # fmt: skip
    add("--slack", type=_at_least(0), metavar="SECONDS",
        help="Seconds a lifecycle duration may fall short (default: 2 + --interval: "
        "polling, and NotBefore's whole seconds).")  # fmt: skip
    add("--rate", type=_at_least(0.5, high=100.0), default=4.0, metavar="PER_SECOND",
        help="Requests per second at most (default 4; the endpoint allows 5 per VM, shared "
        "with every agent on it; more only where there is no limit: "
        "`forewarn serve --rate-limit 0`).")  # fmt: skip
    add("--skip-probes", action="store_true",
        help="With --follow: only follow (of the request rules, only section 6's).")  # fmt: skip
    add("--burst", action="store_true",
        help="Also check the rate limit (R8): spends the VM's budget for a second.")  # fmt: skip
    add("--rules", dest="list_rules", action="store_true", help="Print the rules and exit.")
    add("--markdown", action="store_true", help="With --rules: as a Markdown table.")


def _agent_commands(commands: Any) -> None:
    agent = _command(
        commands, "agent",
        "The VM-side daemon: react to scheduled events, approve safely, recover.",
        "Settings are layered: defaults < --config TOML < FOREWARN_AGENT_* < flags; a\n"
        "configuration error names the key, exits 2, and starts nothing.",
    )  # fmt: skip
    subcommands = agent.add_subparsers(metavar="COMMAND", required=True)
    config = os.environ.get("FOREWARN_AGENT_CONFIG") or None

    def with_config(parser: _Parser) -> None:
        parser.add_argument("--config", "-c", dest="config_path", type=_file, default=config,
                            metavar="FILE", help=_CONFIG_HELP)  # fmt: skip

    run = _command(subcommands, "run", "Run the agent until SIGTERM or SIGINT.", run=_agent_run)
    with_config(run)
    add = run.add_argument
    add("--vm-name", help="This VM's name if instance metadata has none.")
    add("--endpoint", metavar="URL", help="Metadata endpoint URL.")
    add("--local-address", metavar="ADDRESS", help="Source address of requests.")
    add("--state-path", metavar="FILE", help="SQLite state file.")
    add("--poll-interval", type=float, metavar="SECONDS", help="Seconds between polls.")
    add("--metrics-bind", metavar="HOST:PORT", help='HOST:PORT of /metrics and probes ("" off).')
    add("--dry-run", action="store_const", const=True,
        help="Log what would be done; run no handler, approve nothing.")  # fmt: skip
    add("--log-format", choices=("json", "console"), help="How log lines are written.")
    add("--log-level", choices=("debug", "info", "warning", "error"), help="The least logged.")
    add("--print-config", action="store_true", help="Print the effective configuration and exit.")

    check = _command(
        subcommands, "check-config",
        "Validate a configuration file (and import python handlers); exit 2 when invalid.",
        run=_agent_check,
    )  # fmt: skip
    with_config(check)
    check.add_argument("--quiet", "-q", action="store_true",
                       help="Print nothing when the file is valid.")  # fmt: skip
    check.add_argument("--skip-programs", action="store_true", help="Do not check that "
                       "exec/kubectl programs exist (checking off the target VM).")  # fmt: skip

    status = _command(
        subcommands, "status",
        "What the agent has seen and done (from its state file), and whether it is ready.",
        run=_agent_status,
    )  # fmt: skip
    with_config(status)
    status.add_argument("--state-path", metavar="FILE", help="SQLite state file.")
    status.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")


def build() -> _Parser:
    """The parser of every VM command (``forewarn`` and its VM subcommands)."""
    parser = _Parser(
        prog="forewarn", allow_abbrev=False,
        description="forewarn: Azure Scheduled Events, runnable anywhere. The VM's commands:",
    )  # fmt: skip
    parser.add_argument("--version", action="store_true", help="Show the version and exit.")
    commands = parser.add_subparsers(metavar="COMMAND", parser_class=_Parser)
    _endpoint_commands(commands)
    _conformance_command(commands)
    _agent_commands(commands)
    return parser


def main(argv: Sequence[str]) -> None:
    """Run the VM command ``argv``; an error ends as one message and its exit code."""
    prefix = "forewarn agent" if argv[:1] == ["agent"] else "forewarn"
    try:
        arguments = build().parse_args(list(argv))
        if arguments.version:
            import forewarn

            print(f"forewarn, version {forewarn.__version__}")
            return
        run: Callable[[argparse.Namespace], None] | None = getattr(arguments, "run", None)
        if run is None:
            raise UsageProblem("a command is required (forewarn --help lists them)")
        del arguments.version
        run(arguments)
    except CommandError as exc:
        fail(str(exc), exc.exit_code, prefix=prefix)
    except KeyboardInterrupt:
        fail("aborted", prefix=prefix)
    except BrokenPipeError:
        closed_pipe()
