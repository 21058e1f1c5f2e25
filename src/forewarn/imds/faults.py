"""Injected endpoint faults: the metadata service failing the way the real one does.

Real IMDS is not always there: 410 for up to 70 s while it gets ready, 500s, 503s, answers
that take seconds, time-outs, dropped connections, and a rate budget of 5 requests/s per
VM shared with every other poller on the VM. A ``Fault`` says what goes wrong, for whom
(a VM, a scope, or the whole fleet), when (a window of platform time, on the ``Clock``),
and for what share of requests; ``FaultBook`` holds them and decides, per request, which
one hits.

Decided here (README "Endpoint faults"): windows are platform time (scaled by
``--time-scale``, moved by ``advance`` on a virtual clock), so a drill reads as it would
in production; added latency and the co-tenant's rate are real seconds on the wire, like
the client's own time-outs. Faults live in the memory of the process that serves them:
not durable (a restart serves faithfully again), and on a scaled-out fleet each process
has its own. With no fault the endpoint pays one attribute check per request
(``FaultBook.active``).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from forewarn.contract import TOO_MANY_REQUESTS, error_body
from forewarn.contract.limits import RATE_LIMIT
from forewarn.fabric import Clock, monotonic
from forewarn.fleet import VM
from forewarn.imds.messages import HANG_UP, RATE_LIMITED, RESET, Reply

__all__ = [
    "FAULT_STATUSES",
    "HANG_SECONDS",
    "MAX_FAULTS",
    "Fault",
    "FaultBook",
    "FaultKind",
    "Hit",
]

#: The statuses a status fault may answer, with the body the endpoint sends: 429 as the
#: contract writes it (R8), 500 as this endpoint answers its own faults, 410 and 503 ours.
FAULT_STATUSES: dict[int, bytes] = {
    410: error_body("Gone"),
    429: error_body(TOO_MANY_REQUESTS),
    500: error_body("Internal server error"),
    503: error_body("Service unavailable"),
}
#: A time-out fault holds a request this long (real seconds) at most, then closes the
#: connection unanswered; clients give up long before (the articles: 1-5 s time-outs).
HANG_SECONDS = 300.0
#: At most this many faults at once (each request looks at every live one).
MAX_FAULTS = 100


class FaultKind(StrEnum):
    """What goes wrong."""

    STATUS = "status"  # an error status with the endpoint's body
    LATENCY = "latency"  # the right answer, late
    TIMEOUT = "timeout"  # accepted, never answered
    RESET = "reset"  # the connection reset (RST), no answer
    COTENANT = "cotenant"  # another poller on the VM eats the rate budget


@dataclass(slots=True)
class Fault:
    """One injected fault. ``vm`` or ``scope`` narrow it (neither: the fleet); ``starts``
    and ``ends`` are platform time (``ends`` None: until cleared); ``share`` of the
    requests it matches are hit (not for a co-tenant, which is always there)."""

    id: str
    kind: FaultKind
    starts: float
    ends: float | None
    vm: str | None = None
    scope: str | None = None
    status: int | None = None
    share: float = 1.0
    latency: float = 0.0
    rate: float = 0.0
    created: float = 0.0
    #: Requests this fault answered (or delayed).
    hits: int = 0
    _budget: dict[str, tuple[float, float]] = field(default_factory=dict, repr=False)

    def applies(self, vm: VM) -> bool:
        """Whether ``vm`` is in this fault's reach."""
        if self.vm is not None:
            return vm.name == self.vm
        if self.scope is not None:
            return vm.scope_id == self.scope
        return True

    def live_at(self, now: float) -> bool:
        return self.starts <= now and (self.ends is None or now < self.ends)

    def over_at(self, now: float) -> bool:
        return self.ends is not None and now >= self.ends

    def cotenant_allows(self, vm: str, limit: float, now: float) -> bool:
        """The VM's own share of its rate budget: ``limit`` less what the co-tenant
        takes, as a token bucket (real time) holding at least one request."""
        rate = limit - self.rate
        if rate <= 0:
            return False
        capacity = max(1.0, rate)
        tokens, last = self._budget.get(vm, (capacity, now))
        tokens = min(capacity, tokens + (now - last) * rate)
        if tokens < 1.0:
            self._budget[vm] = (tokens, now)
            return False
        self._budget[vm] = (tokens - 1.0, now)
        return True


@dataclass(frozen=True, slots=True)
class Hit:
    """What a fault does to one request: answer ``reply`` instead, or add ``latency``."""

    fault: Fault
    reply: Reply | None = None
    latency: float = 0.0


_REPLIES = {code: Reply(code, body) for code, body in FAULT_STATUSES.items()}


async def _at_once(reply: Reply) -> Reply:
    return reply


class FaultBook:
    """The live faults of one endpoint, and the per-request decision.

    ``active`` is the only thing the endpoint's hot path reads while nothing is injected.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        rate_limit: float | None = RATE_LIMIT,
        draw: Callable[[], float] | None = None,
        real_time: Callable[[], float] = monotonic,
        on_hit: Callable[[str, str], None] | None = None,
    ) -> None:
        """``rate_limit`` is the endpoint's per-VM budget a co-tenant eats into (5/s when
        the limit is off); ``draw`` decides shares (seeded in tests); ``on_hit(vm, kind)``
        is told of every faulted request (the rehearsal tracker counts them)."""
        self.clock = clock
        self.active = False
        self._faults: dict[str, Fault] = {}
        self._limit = rate_limit or RATE_LIMIT
        self._draw = draw or random.Random().random
        self._real = real_time
        self._on_hit = on_hit
        self._ids = itertools.count(1)
        self._hang: asyncio.Future[Reply] | None = None
        self._hang_timer: asyncio.TimerHandle | None = None

    # ----------------------------------------------------------------- control

    def add(
        self,
        kind: FaultKind,
        *,
        vm: str | None = None,
        scope: str | None = None,
        status: int | None = None,
        after: float = 0.0,
        duration: float | None = None,
        share: float = 1.0,
        latency: float = 0.0,
        rate: float = 0.0,
    ) -> Fault:
        """Inject a fault (inputs already checked by the caller: ``check_fault``).
        ``after`` and ``duration`` are seconds of this book's clock: platform time the
        caller already divided by the time scale (``drill_routes``)."""
        self.prune()
        if len(self._faults) >= MAX_FAULTS:
            raise ValueError(f"at most {MAX_FAULTS} faults at once; clear some first")
        now = self.clock.now()
        starts = now + after
        fault = Fault(
            id=f"fault-{next(self._ids)}", kind=kind, starts=starts,
            ends=None if duration is None else starts + duration, vm=vm, scope=scope,
            status=status, share=share, latency=latency, rate=rate, created=now,
        )  # fmt: skip
        self._faults[fault.id] = fault
        self.active = True
        return fault

    def remove(self, fault_id: str) -> Fault | None:
        """Clear one fault (None: no such fault)."""
        fault = self._faults.pop(fault_id, None)
        self._settle()
        return fault

    def clear(self) -> list[Fault]:
        """Clear every fault; returns them."""
        gone = list(self._faults.values())
        self._faults.clear()
        self._settle()
        return gone

    def faults(self) -> list[Fault]:
        """The faults not over yet, oldest first."""
        self.prune()
        return list(self._faults.values())

    def prune(self) -> None:
        """Forget faults whose window is over."""
        now = self.clock.now()
        over = [f.id for f in self._faults.values() if f.over_at(now)]
        for fault_id in over:
            del self._faults[fault_id]
        if over:
            self._settle()

    def _settle(self) -> None:
        self.active = bool(self._faults)
        if not any(f.kind is FaultKind.TIMEOUT for f in self._faults.values()):
            self._release_hung()

    # ---------------------------------------------------------------- requests

    def hit(self, vm: VM) -> Hit | None:
        """The fault that hits this request of ``vm`` (None: answer as usual)."""
        now = self.clock.now()
        chosen: Hit | None = None
        expired = False
        for fault in self._faults.values():
            if fault.over_at(now):
                expired = True
                continue
            if chosen is not None or not fault.live_at(now) or not fault.applies(vm):
                continue
            if fault.kind is FaultKind.COTENANT:
                if not fault.cotenant_allows(vm.name, self._limit, self._real()):
                    chosen = Hit(fault, RATE_LIMITED)
                continue
            if fault.share < 1.0 and self._draw() >= fault.share:
                continue
            chosen = self._hit(fault)
        if expired:
            self.prune()
        if chosen is not None:
            chosen.fault.hits += 1
            if self._on_hit is not None:
                self._on_hit(vm.name, chosen.fault.kind.value)
        return chosen

    def _hit(self, fault: Fault) -> Hit:
        kind = fault.kind
        if kind is FaultKind.STATUS:
            return Hit(fault, _REPLIES[fault.status or 500])
        if kind is FaultKind.LATENCY:
            return Hit(fault, latency=fault.latency)
        if kind is FaultKind.RESET:
            return Hit(fault, Reply(RESET, b"", wait=_at_once(Reply(RESET, b""))))
        return Hit(fault, Reply(HANG_UP, b"", wait=self._hung()))

    def _hung(self) -> asyncio.Future[Reply]:
        """One future every timed-out request waits on: it resolves (closing them all,
        unanswered) when no time-out fault is left, or after ``HANG_SECONDS``."""
        if self._hang is None or self._hang.done():
            loop = asyncio.get_running_loop()
            self._hang = loop.create_future()
            self._hang_timer = loop.call_later(HANG_SECONDS, self._release_hung)
        return self._hang

    def _release_hung(self) -> None:
        hang, self._hang = self._hang, None
        if self._hang_timer is not None:
            self._hang_timer.cancel()
            self._hang_timer = None
        if hang is not None and not hang.done():
            hang.set_result(Reply(HANG_UP, b""))
