"""Roll-ups of a rehearsal: per operation and per VM, named rather than counted.

A rolling rollout is many operations (one per update domain) and a host update one
operation with an event per scope; an operator reads either as one thing ("update domain
3 of 5, 38 of 40 approved, 2 never saw it: web-17, web-33"). Each VM is read the other
way: what it saw and did over the whole rehearsal, and when it first failed. VMs hit
with no notice (Scheduled Events off in their scope) have no event: they come from the
operation facts, and rank first, as the worst a rehearsal can reveal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from forewarn.fleet.names import natural
from forewarn.rehearsal.facts import OperationFacts
from forewarn.rehearsal.sliced_drop import drop_sliced
from forewarn.rehearsal.sliced_sort import sort_sliced
from forewarn.rehearsal.verdicts import EventVerdict, VmVerdict, seconds

__all__ = [
    "FAULTED",
    "OPERATION_VERDICTS",
    "VM_ATTENTION",
    "VM_VERDICTS",
    "OperationRollup",
    "ScopeLine",
    "VmGroup",
    "VmRollup",
    "is_faulted",
    "names",
    "needs_attention",
    "operation_rollups",
    "polling_states",
    "vm_rollups",
]

#: Operation verdicts, worst first.
OPERATION_VERDICTS = ("no-notice", "fail", "warn", "pending", "ok", "info")

#: A VM's verdict in a roll-up, worst first (its worst over the events it was in; a VM
#: only in the roll-up because it stopped polling has the verdict "none", ranked last).
VM_VERDICTS = ("no-notice", "missed", "unlisted", "detected", "waiting", "approved",
               "created-started", "unseen")  # fmt: skip
_VM_ORDER = VM_VERDICTS
_VM_RANK = {v: i for i, v in enumerate(_VM_ORDER)}
_FAILED = frozenset({"no-notice", "missed"})
#: VM verdicts an operator must look at: hit with no notice, never saw an event, approved
#: one that did not list it, saw one that nobody it lists approved. (Any VM not polling
#: needs attention too: ``needs_attention``.)
VM_ATTENTION = frozenset({"no-notice", "missed", "unlisted", "detected"})


def names(vms: Iterable[str], limit: int = 5) -> str:
    """Names, the first ``limit`` of them then how many more: 'a, b and 3 more'."""
    listed = list(vms)
    shown = ", ".join(listed[:limit])
    return shown + (f" and {len(listed) - limit} more" if len(listed) > limit else "")


class ScopeLine(msgspec.Struct, kw_only=True):
    """One scope an operation touched: its verdict and what happened there."""

    scope: str
    verdict: str
    vms: int
    summary: str


class VmGroup(msgspec.Struct, kw_only=True):
    """VMs of an operation named for one reason (``label``: "never saw it", ...)."""

    label: str
    vms: list[str]


class OperationRollup(msgspec.Struct, kw_only=True):
    """One operation as an operator reads it (a rollout's batches together).

    ``verdict``: no-notice | fail | warn | pending | ok | info; ``progress``: one line,
    VMs named; the name lists are complete (the line shortens them). ``approved``: VMs
    whose event was approved by a VM it lists (itself or a peer); ``not_approved``: VMs
    that saw an event nobody it lists approved."""

    id: str
    kind: str | None
    target: str | None
    #: Where it was asked for: control (API, CLI, dashboard) or arm.
    via: str | None = None
    verdict: str
    progress: str
    created_at: float | None
    started_at: float | None
    ended_at: float | None
    batch: int | None
    batches: int | None
    vms: int
    approved: int
    no_notice: list[str]
    missed: list[str]
    not_approved: list[str]
    not_polling: list[str]
    scopes: list[ScopeLine]
    operations: list[str]
    events: list[str]
    #: ``progress`` in parts: what it says before any VM is named, then each group of
    #: VMs named in full (``forewarn report --all`` prints every name).
    head: list[str] = []
    groups: list[VmGroup] = []
    #: The whole length of each list cut in a rolled-up verdict (``bounded.py``).
    trimmed: dict[str, int] = {}


class VmRollup(msgspec.Struct, kw_only=True):
    """One VM over the rehearsal: its worst verdict, when it first failed, each event.

    ``verdict``: one of ``VM_VERDICTS`` (or "none": only here as not polling);
    ``saw``: events it saw before they started; ``approved``: events approved by it or
    a peer it lists; ``polling``: "polling", "never polled", "stopped polling ..." or
    (``FAULTED``) asking while injected faults answer it."""

    vm: str
    scope: str | None
    verdict: str
    first_failed_at: float | None
    events: int
    saw: int
    approved: int
    missed: int
    no_notice: int
    polling: str
    lines: list[str]


#: How ``polling`` begins for a VM that asks, but whose requests injected faults answer:
#: not a VM that stopped polling (the fault is the reason it is not served).
FAULTED = "asking, but injected faults answer it"


def is_faulted(state: str) -> bool:
    """Whether a polling state says injected faults answer the VM (``FAULTED``)."""
    return state.startswith(FAULTED)


def needs_attention(vm: VmRollup) -> bool:
    """Whether a VM did not react as it should: a verdict of ``VM_ATTENTION``, or it
    stopped (or never started) polling. The dashboard's VM panel lists these first."""
    return vm.verdict in VM_ATTENTION or vm.polling != "polling"


def _rolled_verdict(event: EventVerdict, v: VmVerdict) -> str:
    """A VM's verdict on one event as the roll-ups read it: a VM that saw an event that a
    VM it lists approved (itself or a peer) did its part; one that saw it while it is
    still scheduled is waiting to approve, not failing."""
    if v.verdict != "detected" or not v.listed:
        return v.verdict
    if event.approved_by in event.resources:
        return "approved"
    return "waiting" if event.status == "scheduled" else "detected"


def _group_key(op_id: str | None, rollouts: Mapping[str, str]) -> str | None:
    return None if op_id is None else rollouts.get(op_id, op_id)


def _worst(verdicts: Iterable[str], order: tuple[str, ...]) -> str | None:
    ranked = [v for v in verdicts if v in order]
    return min(ranked, key=order.index) if ranked else None


def operation_rollups(
    events: list[EventVerdict],
    operations: list[OperationFacts],
    scope_of: Mapping[str, str],
    not_polling: Mapping[str, str],
) -> list[OperationRollup]:
    """Every operation (a rollout as one), worst first, then newest first."""
    rollouts = {o.id: o.rollout_id for o in operations if o.rollout_id is not None}
    groups: dict[str, tuple[list[OperationFacts], list[EventVerdict]]] = {}
    for op in sorted(operations, key=lambda o: (o.created_at or 0.0, o.id)):
        groups.setdefault(op.rollout_id or op.id, ([], []))[0].append(op)
    for event in events:
        key = _group_key(event.operation_id, rollouts) or event.id
        groups.setdefault(key, ([], []))[1].append(event)
    out = [_rollup(key, ops, evs, scope_of, not_polling) for key, (ops, evs) in groups.items()]
    out.sort(key=lambda r: -(r.created_at or 0.0))
    out.sort(key=lambda r: OPERATION_VERDICTS.index(r.verdict))
    return out


def _rollup(
    key: str,
    ops: list[OperationFacts],
    events: list[EventVerdict],
    scope_of: Mapping[str, str],
    not_polling: Mapping[str, str],
) -> OperationRollup:
    first = ops[0] if ops else None
    vm_verdicts: dict[str, str] = {}
    for event in events:
        for v in event.vms:
            if v.listed:
                verdict = _rolled_verdict(event, v)
                known = vm_verdicts.get(v.vm)
                if known is None or _VM_RANK.get(verdict, 99) < _VM_RANK.get(known, 99):
                    vm_verdicts[v.vm] = verdict
    no_notice = sort_sliced({vm for op in ops for vm in op.unnotified or ()}, key=natural)
    for vm in no_notice:
        vm_verdicts[vm] = "no-notice"
    missed = sort_sliced((vm for vm, v in vm_verdicts.items() if v == "missed"), key=natural)
    approved = sum(1 for v in vm_verdicts.values() if v == "approved")
    not_approved = sort_sliced((vm for vm, v in vm_verdicts.items() if v == "detected"), natural)
    silent = sort_sliced((vm for vm in vm_verdicts if vm in not_polling), key=natural)
    faulted = [vm for vm in silent if is_faulted(not_polling[vm])]
    # named above: their verdicts (a set of their names is a million built in one call
    # of C, the lock held 0.15 s, after a region rollout)
    named = ("no-notice", "missed", "detected")
    verdict = "no-notice" if no_notice else (
        _worst((e.verdict for e in events), OPERATION_VERDICTS) or "info"
    )  # fmt: skip
    batch = max((o.batch for o in ops if o.batch is not None), default=None)
    batches = next((o.batches for o in ops if o.batches is not None), None)
    scopes = _scope_lines(events, no_notice, scope_of)
    head = []
    if batch is not None and batches is not None:  # a region rollout's batches are waves
        step = "wave" if first is not None and first.target == "region" else "update domain"
        head.append(f"{step} {batch + 1} of {batches}")
    elif len(scopes) > 1:
        head.append(f"{len(scopes)} scopes")
    total = len(vm_verdicts)
    if total:
        head.append(f"{approved} of {total} approved")
    groups = [
        VmGroup(label=label, vms=group)
        for label, group in (
            ("got no notice", no_notice), ("never saw it", missed),
            ("saw it but did not approve", not_approved),
            ("asked, but injected faults answered",
             [vm for vm in faulted if vm_verdicts[vm] not in named]),
            ("stopped or never polled",
             [vm for vm in silent if vm_verdicts[vm] not in named and vm not in faulted]),
        )
        if group
    ]  # fmt: skip
    if not total and not events:
        head.append("no VM affected")
    parts = [*head, *(f"{len(g.vms)} {g.label}: {names(g.vms)}" for g in groups)]
    created = [t for t in [*(o.created_at for o in ops), *(e.created_at for e in events)] if t]
    started = [t for t in [*(o.started_at for o in ops), *(e.started_at for e in events)] if t]
    ended = [t for t in [*(o.ended_at for o in ops), *(e.ended_at for e in events)] if t]
    live = any(e.status in ("scheduled", "started") for e in events) or any(
        o.ended_at is None for o in ops
    )
    return OperationRollup(
        id=key,
        kind=(first.kind if first else None) or next((e.kind for e in events if e.kind), None),
        target=(first.rollout_scope or first.target) if first else None,
        via=first.via if first else None,
        verdict=verdict,
        progress=", ".join(parts),
        created_at=min(created, default=None),
        started_at=min(started, default=None),
        ended_at=None if live else max(ended, default=None),
        batch=batch,
        batches=batches,
        vms=total,
        approved=approved,
        no_notice=no_notice,
        missed=missed,
        not_approved=not_approved,
        not_polling=silent,
        scopes=scopes,
        operations=[o.id for o in ops],
        events=[e.id for e in events],
        head=head,
        groups=groups,
    )


def _scope_lines(
    events: list[EventVerdict], no_notice: list[str], scope_of: Mapping[str, str]
) -> list[ScopeLine]:
    by_scope: dict[str, list[EventVerdict]] = {}
    for event in events:
        by_scope.setdefault(event.scope or "?", []).append(event)
    silent: dict[str, list[str]] = {}
    for vm in no_notice:
        silent.setdefault(scope_of.get(vm, "?"), []).append(vm)
    lines = []
    for scope in sorted(set(by_scope) | set(silent)):
        evs = by_scope.get(scope, [])
        hit = silent.get(scope, [])
        vms = len({v.vm for e in evs for v in e.vms if v.listed}) + len(hit)
        if hit:
            summary = f"{len(hit)} VMs hit with no notice (Scheduled Events off): {names(hit)}"
            lines.append(ScopeLine(scope=scope, verdict="no-notice", vms=vms, summary=summary))
            continue
        verdict = _worst((e.verdict for e in evs), OPERATION_VERDICTS) or "info"
        worst = next(e for e in evs if e.verdict == verdict)
        summary = worst.summary if len(evs) == 1 else f"{len(evs)} events; {worst.summary}"
        lines.append(ScopeLine(scope=scope, verdict=verdict, vms=vms, summary=summary))
    lines.sort(key=lambda s: (OPERATION_VERDICTS.index(s.verdict), s.scope))
    return lines


def vm_rollups(
    events: list[EventVerdict],
    operations: list[OperationFacts],
    scope_of: Mapping[str, str],
    not_polling: Mapping[str, str],
) -> list[VmRollup]:
    """Every VM an event listed or an operation hit, and every VM not polling: the VMs
    that failed first (earliest failure first), then the others by verdict and name.

    Each event's verdict is read as ``operation_rollups`` reads it: a VM whose event a
    peer approved counts as approved (the line names who approved)."""
    lines: dict[str, list[tuple[float, str, bool, str]]] = {}
    failed_at: dict[str, float] = {}

    def note(vm: str, at: float | None, verdict: str, saw: bool, line: str) -> None:
        lines.setdefault(vm, []).append((at or 0.0, verdict, saw, line))
        if verdict in _FAILED and at is not None:
            failed_at[vm] = min(at, failed_at.get(vm, at))

    for op in operations:
        for vm in op.unnotified or ():
            at = op.started_at or op.created_at
            line = f"{op.kind}: hit with no notice (Scheduled Events off)"
            note(vm, at, "no-notice", False, line)
    for e in events:
        what = f"{e.type} of {e.scope} ({e.kind or 'operation'})"
        for v in e.vms:
            at = e.started_at if v.verdict == "missed" else (v.first_seen or e.created_at)
            verdict = _rolled_verdict(e, v)
            said = verdict
            if verdict != v.verdict:  # a peer approved it, or it may still approve
                by_peer = f"approved by {e.approved_by}"
                said = by_peer if verdict == "approved" else "waiting to approve"
            saw = v.verdict in ("approved", "detected")
            note(v.vm, at, verdict, saw, f"{what}: {said}, {v.note}")
    for vm in not_polling:
        lines.setdefault(vm, [])
    out = []
    for vm, entries in lines.items():
        entries.sort(key=lambda x: x[0])
        verdicts = [v for _, v, _, _ in entries]
        worst = _worst(verdicts, _VM_ORDER) or "none"
        out.append(
            VmRollup(
                vm=vm, scope=scope_of.get(vm), verdict=worst, first_failed_at=failed_at.get(vm),
                events=sum(1 for v in verdicts if v != "no-notice"),
                saw=sum(1 for _, _, saw, _ in entries if saw),
                approved=verdicts.count("approved"), missed=verdicts.count("missed"),
                no_notice=verdicts.count("no-notice"),
                polling=not_polling.get(vm, "polling"), lines=[line for *_, line in entries],
            )
        )  # fmt: skip
    drop_sliced(lines, failed_at)  # a list and a tuple a VM, freed at return at once
    never = float("inf")  # the VMs that failed first, earliest first; then verdict, name
    return sort_sliced(out, key=lambda r: (
        never if r.first_failed_at is None else r.first_failed_at,
        _VM_RANK.get(r.verdict, 99), natural(r.vm),
    ))  # fmt: skip


def polling_states(
    never: Iterable[str], stopped: Mapping[str, float], faulted: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Each VM not polling (or not served), said once: 'never polled', 'stopped polling
    3 min ago', or ``FAULTED`` with what ``faulted`` says (its requests, by kind)."""
    out = {vm: "never polled" for vm in never}
    out.update({vm: f"stopped polling {seconds(ago)} ago" for vm, ago in stopped.items()})
    out.update({vm: f"{FAULTED} ({what})" for vm, what in (faulted or {}).items()})
    return out
