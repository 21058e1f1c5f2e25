"""The simulated platform: topology, operations, the event lifecycle, clock, scheduler.

Pure domain logic over a Store; never sees HTTP, JSON bodies or status codes.
"""

from .catalogue import CATALOGUE, OperationKind, OperationSpec, spec_for
from .clock import Clock, monotonic, wall_time
from .engine import Fabric, FabricConfig
from .errors import (
    ClockError,
    Conflict,
    EventNotVisible,
    FabricError,
    FleetError,
    InvalidOperation,
    InvalidTransition,
    NotFoundError,
    StoreUnavailable,
)
from .fleetfile import (
    FleetSpec,
    build_topology,
    demo_fleet,
    fleet_from_builtins,
    fleet_to_builtins,
    load_fleet_file,
)
from .journal import Commit, InlineJournal, Journal, SettleCallback
from .planner import OperationRequest
from .ports import Store
from .reactions import EventFacts, ReactionData, ReactionTracker, VmPolls, VmReaction
from .records import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    OperationState,
    RolloutRecord,
    ScopeState,
    Snapshot,
)
from .scheduler import Scheduler
from .topology import VM, Scope, ScopeKind, ScopePolicy, Topology
from .verdicts import ReactionReport, grade
from .views import ScopeView
from .yamlfile import YamlError, read_yaml

__all__ = [
    "CATALOGUE",
    "VM",
    "Changes",
    "Clock",
    "ClockError",
    "Commit",
    "Conflict",
    "EventFacts",
    "EventNotVisible",
    "EventRecord",
    "Fabric",
    "FabricConfig",
    "FabricError",
    "FleetError",
    "FleetSpec",
    "HistoryEntry",
    "InlineJournal",
    "InvalidOperation",
    "InvalidTransition",
    "Journal",
    "NotFoundError",
    "OperationKind",
    "OperationRecord",
    "OperationRequest",
    "OperationSpec",
    "OperationState",
    "ReactionData",
    "ReactionReport",
    "ReactionTracker",
    "RolloutRecord",
    "Scheduler",
    "Scope",
    "ScopeKind",
    "ScopePolicy",
    "ScopeState",
    "ScopeView",
    "SettleCallback",
    "Snapshot",
    "Store",
    "StoreUnavailable",
    "Topology",
    "VmPolls",
    "VmReaction",
    "YamlError",
    "build_topology",
    "demo_fleet",
    "fleet_from_builtins",
    "fleet_to_builtins",
    "grade",
    "load_fleet_file",
    "monotonic",
    "read_yaml",
    "spec_for",
    "wall_time",
]
