"""Scenarios: named platform behaviour and scenario files, played against a running
server through its control API, with expectations that say whether the fleet got what the
scenario meant; and seeded "maintenance weather" for soak tests.

HTTP only: the engine drives the server with ``forewarn.controlapi.ControlClient``, the
one client of the control API (so it plays against a local, remote or scaled-out server
alike). Of the emulator it imports only the fabric's
operation catalogue (the operations' names, one source of truth) and its YAML reader (line
numbers in errors), never its engine or state; import-linter holds it to that.
"""

from forewarn.contract.durations import format_duration, parse_duration, parse_rate
from forewarn.scenarios.arm_calls import ArmAccess
from forewarn.scenarios.expect import Check
from forewarn.scenarios.fleetview import FleetView
from forewarn.scenarios.library import find_scenario, library_names, library_scenario, library_text
from forewarn.scenarios.model import (
    Scenario,
    ScenarioError,
    Step,
    load_scenario_file,
    parse_scenario,
)
from forewarn.scenarios.outcome import ArrivalResult, NullReporter, Reporter, Run, StepResult
from forewarn.scenarios.reaction import Reaction, reaction_line, reaction_lines
from forewarn.scenarios.runner import Runner
from forewarn.scenarios.targets import SELECTORS
from forewarn.scenarios.timeline import SeenEvent, Snapshot, Timeline
from forewarn.scenarios.weather import Arrival, Weather, arrivals

__all__ = [
    "SELECTORS",
    "ArmAccess",
    "Arrival",
    "ArrivalResult",
    "Check",
    "FleetView",
    "NullReporter",
    "Reaction",
    "Reporter",
    "Run",
    "Runner",
    "Scenario",
    "ScenarioError",
    "SeenEvent",
    "Snapshot",
    "Step",
    "StepResult",
    "Timeline",
    "Weather",
    "arrivals",
    "find_scenario",
    "format_duration",
    "library_names",
    "library_scenario",
    "library_text",
    "load_scenario_file",
    "parse_duration",
    "parse_rate",
    "parse_scenario",
    "reaction_line",
    "reaction_lines",
]
