"""The simulated platform: operations, the event lifecycle, clock, scheduler.

Pure domain logic over a Store; never sees HTTP, JSON bodies or status codes.
"""

from forewarn.fabric.catalogue import CATALOGUE, OperationKind, OperationSpec, spec_for
from forewarn.fabric.clock import Clock, monotonic, wall_time
from forewarn.fabric.config import FabricConfig
from forewarn.fabric.engine import Fabric
from forewarn.fabric.errors import (
    ClockError,
    Conflict,
    EventNotVisible,
    FabricError,
    InvalidOperation,
    InvalidTransition,
    NotFoundError,
    StoreUnavailable,
)
from forewarn.fabric.impact import pending_maintenance
from forewarn.fabric.journal import Commit, InlineJournal, Journal, SettleCallback
from forewarn.fabric.last_requests import LastRequests
from forewarn.fabric.planner import DEFAULT_WAVE_HOSTS, MAX_WAVE_HOSTS, OperationRequest
from forewarn.fabric.ports import FabricObserver, Owing, Store
from forewarn.fabric.records import (
    RESET_KIND,
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    OperationState,
    OutboxEntry,
    RolloutRecord,
    ScopeState,
    Snapshot,
)
from forewarn.fabric.scheduler import Scheduler
from forewarn.fabric.scope_view import ScopeView

__all__ = [
    "CATALOGUE",
    "DEFAULT_WAVE_HOSTS",
    "MAX_WAVE_HOSTS",
    "RESET_KIND",
    "Changes",
    "Clock",
    "ClockError",
    "Commit",
    "Conflict",
    "EventNotVisible",
    "EventRecord",
    "Fabric",
    "FabricConfig",
    "FabricError",
    "FabricObserver",
    "HistoryEntry",
    "InlineJournal",
    "InvalidOperation",
    "InvalidTransition",
    "Journal",
    "LastRequests",
    "NotFoundError",
    "OperationKind",
    "OperationRecord",
    "OperationRequest",
    "OperationSpec",
    "OperationState",
    "OutboxEntry",
    "Owing",
    "RolloutRecord",
    "Scheduler",
    "ScopeState",
    "ScopeView",
    "SettleCallback",
    "Snapshot",
    "Store",
    "StoreUnavailable",
    "monotonic",
    "pending_maintenance",
    "spec_for",
    "wall_time",
]
