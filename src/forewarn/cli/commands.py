"""The table of the emulator's commands, click-free: where each lives, the line ``forewarn
--help`` lists it with, the extra it needs; and the message for a missing extra."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["COMMANDS", "SERVER", "LazyCommand", "lacking"]

#: The extra the emulator's commands need (click and the server's libraries).
SERVER = "server"


class LazyCommand(NamedTuple):
    """Where a command lives, and what ``--help`` says of it without importing it."""

    #: ``package.module:attribute`` of the click command.
    target: str
    #: The first sentence of the command's help (a test holds it equal to the command's).
    summary: str
    #: The install extra the command's module needs beyond the VM install, if any.
    extra: str | None = SERVER


def lacking(command: str, module: str, extra: str = SERVER) -> str:
    """What a command says where the install lacks the extra it needs."""
    return (
        f"`forewarn {command}` is part of the emulator, which this install lacks "
        f"(no module {module!r}): install forewarn with its [{extra}] extra: "
        f"pip install '<its wheel or checkout>[{extra}]'"
    )


#: Every command: where it lives and the summary ``forewarn --help`` lists it with.
COMMANDS: dict[str, LazyCommand] = {
    "serve": LazyCommand(
        "forewarn.cli.serve:serve",
        "Run the metadata endpoint and the control API.",
    ),
    # who leads a scaled-out fleet
    "status": LazyCommand(
        "forewarn.cli.status:status",
        "Who leads a scaled-out fleet, and each process's replication lag.",
    ),
    # write and check fleet files
    "fleet": LazyCommand(
        "forewarn.cli.fleet:fleet",
        "Write and check fleet files (no server needed); reset a running server's fleet.",
    ),
    # serve recorded documents again
    "replay": LazyCommand(
        "forewarn.cli.replay:replay",
        "Serve a recorded (`forewarn serve --record`) or captured sequence of documents to "
        "one VM, on a metadata endpoint, with the original timing divided by --time-scale.",
    ),
    # play platform behaviour against a server
    "scenario": LazyCommand(
        "forewarn.cli.scenario:scenario",
        "Play named platform behaviour or scenario files against a running server.",
    ),
    # how the fleet reacted: a verdict per event and VM
    "report": LazyCommand(
        "forewarn.cli.report:report",
        "How the fleet reacted: each operation rolled up (VMs hit with no notice first), "
        "the VMs that failed first, each event (who saw it when, who approved it before "
        "NotBefore, who missed it), who never or no longer polls, approvals by VMs not listed.",
    ),
    "trigger": LazyCommand(
        "forewarn.cli.trigger:trigger",
        "Start OPERATION on TARGET (a VM, a host, or a scope to walk its update domains), "
        "or with --region over the whole fleet.",
    ),
    "rollouts": LazyCommand(
        "forewarn.cli.control:rollouts",
        "Rollouts (a scope's or the region's update-domain walk), where each stands.",
    ),
    # with --url, the VM's (forewarn.vm.parser)
    "events": LazyCommand(
        "forewarn.cli.control:events",
        "List live events (or, with --as, the document one VM sees).",
    ),
    "approve": LazyCommand(
        "forewarn.cli.control:approve",
        "Approve EVENT_ID... as the operator (each starts when all its VMs are approved).",
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
}
