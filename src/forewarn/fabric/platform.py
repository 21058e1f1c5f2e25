"""What the lifecycle rules read besides the state: the fleet, the settings, how ids are
made, and whether a scope has Scheduled Events on at an instant (a module of its own so
that the rules' helpers, ``region.py``, take it without importing the rules)."""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass

from forewarn.fabric.catalogue import OperationSpec
from forewarn.fabric.config import FabricConfig
from forewarn.fabric.state import FabricState
from forewarn.fleet.topology import VM, Topology

__all__ = ["Platform"]


@dataclass(frozen=True, slots=True)
class Platform:
    """What the rules read besides the state: the fleet, the settings, how ids are made,
    and whether a scope has Scheduled Events on at an instant."""

    topology: Topology
    config: FabricConfig
    new_id: Callable[[], str]
    new_token: Callable[[], str]
    enabled: Callable[[str, float], bool]

    def fresh_id(self, prefix: str, taken: Container[str]) -> str:
        """``prefix-<token>`` not in ``taken``: tokens begin with the wall clock's
        milliseconds, so one that stepped back across a restart could repeat an old one."""
        while (candidate := f"{prefix}-{self.new_token()}") in taken:
            pass
        return candidate

    def min_notice(self, state: FabricState, spec: OperationSpec, vms: list[VM]) -> float:
        """The least notice an operation of ``spec`` on ``vms`` may be given."""
        if spec.needs_scale_set or spec.os_image:
            return self._policy_notice(state, spec, vms)
        return self.config.scaled(spec.minimum_notice)

    def default_notice(self, state: FabricState, spec: OperationSpec, vms: list[VM]) -> float:
        """The notice an operation of ``spec`` on ``vms`` gets unless told otherwise."""
        if spec.created_started:
            return 0.0
        if spec.needs_scale_set or spec.os_image:
            return self._policy_notice(state, spec, vms)
        return self.config.scaled(spec.notice)

    def _policy_notice(self, state: FabricState, spec: OperationSpec, vms: list[VM]) -> float:
        """A scope's configured Terminate or OS image notice (the planner allows one
        scale set per Terminate request; a reimage is one VM)."""
        policies = [state.policy(vm.scope_id) for vm in vms]
        if spec.os_image:
            minutes = max((p.os_image_timeout_minutes for p in policies), default=15)
        else:
            minutes = max((p.terminate_timeout_minutes for p in policies), default=5)
        return self.config.scaled(minutes * 60.0)
