"""The simulated platform: topology, operations, the event lifecycle, clock, scheduler.

Pure domain logic over a Store; never sees HTTP, JSON bodies or status codes.
"""

from forewarn.fabric.catalogue import CATALOGUE, OperationKind, OperationSpec, spec_for
from forewarn.fabric.clock import Clock, monotonic, wall_time
from forewarn.fabric.engine import Fabric, FabricConfig
from forewarn.fabric.errors import (
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
from forewarn.fabric.fleetfile import (
    FleetSpec,
    build_topology,
    demo_fleet,
    fleet_from_builtins,
    fleet_to_builtins,
    load_fleet_file,
)
from forewarn.fabric.journal import Commit, InlineJournal, Journal, SettleCallback
from forewarn.fabric.planner import OperationRequest
from forewarn.fabric.ports import Store
from forewarn.fabric.reactions import EventFacts, ReactionData, ReactionTracker, VmPolls, VmReaction
from forewarn.fabric.records import (
    Changes,
    EventRecord,
    HistoryEntry,
    OperationRecord,
    OperationState,
    RolloutRecord,
    ScopeState,
    Snapshot,
)
from forewarn.fabric.scheduler import Scheduler
from forewarn.fabric.topology import VM, Scope, ScopeKind, ScopePolicy, Topology
from forewarn.fabric.verdicts import ReactionReport, grade
from forewarn.fabric.views import ScopeView
from forewarn.fabric.yamlfile import YamlError, read_yaml

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
