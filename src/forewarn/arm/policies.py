"""``scheduledEventsPolicy`` and ``scheduledEventsProfile``: the ARM settings that change
what events a scope's VMs get, read from a PUT/PATCH body and written back on GET.

What the platform acts on lives in the scope's ``ScopePolicy`` (auto-approved user
reboots and redeploys, the terminate notice); what it only keeps for now (all instances
down, OS image notifications, Event Grid and Resource Graph publishing) lives in
``Extras``, per scope, for the routes that read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from forewarn.arm.errors import ArmError
from forewarn.fleet.topology import ScopePolicy

__all__ = ["Extras", "apply_settings", "extras_of", "render_policy", "render_profile"]

_T = TypeVar("_T")
_DURATION = re.compile(r"^PT(?:(\d{1,4})H)?(?:(\d{1,6})M)?(?:(\d{1,8})S)?$")


@dataclass(frozen=True, slots=True)
class Extras:
    """Settings ARM keeps for a scope that the platform does not act on (yet)."""

    all_instances_down: bool = False
    event_grid_and_resource_graph: bool = False
    scheduled_events_api_version: str | None = None
    os_image_notification: bool = False
    os_image_timeout_minutes: int = 15


def extras_of(extras: dict[str, Extras], scope_id: str, policy: ScopePolicy) -> Extras:
    """A scope's ARM-only settings; before ARM set any, what the fleet file says."""
    return extras.get(scope_id) or Extras(event_grid_and_resource_graph=policy.event_grid)


def _invalid(path: str, why: str) -> ArmError:
    return ArmError(400, "InvalidParameter", f"The value of parameter '{path}' is invalid: {why}")


def _object(value: Any, path: str, known: set[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _invalid(path, "expected an object")
    unknown = sorted(set(value) - known)
    if unknown:
        raise _invalid(
            f"{path}.{unknown[0]}", f"unknown property; known: {', '.join(sorted(known))}"
        )
    return value


def _flag(value: Any, path: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise _invalid(path, "expected true or false")


def _minutes(value: Any, path: str, low: int, high: int) -> int | None:
    """An ISO 8601 duration (``PT5M``) of whole minutes within ``low``..``high``."""
    if value is None:
        return None
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None or not any(match.groups()):
        raise _invalid(path, f"expected an ISO 8601 duration such as PT{high}M")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total % 60 or not low * 60 <= total <= high * 60:
        raise _invalid(path, f"must be whole minutes from PT{low}M to PT{high}M")
    return total // 60


def _auto(section: dict[str, Any], key: str, path: str) -> bool | None:
    inner = _object(section.get(key), f"{path}.{key}", {"automaticallyApprove"})
    return _flag(inner.get("automaticallyApprove"), f"{path}.{key}.automaticallyApprove")


def apply_settings(
    policy: ScopePolicy,
    extras: Extras,
    scheduled_events_policy: Any,
    scheduled_events_profile: Any,
) -> tuple[ScopePolicy, Extras]:
    """``policy`` and ``extras`` changed by what a body gives (absent parts stay as they
    are); raises ``ArmError`` 400 naming the first malformed property, having changed
    nothing."""
    path = "properties.scheduledEventsPolicy"
    section = _object(
        scheduled_events_policy,
        path,
        {"userInitiatedReboot", "userInitiatedRedeploy", "allInstancesDown",
         "scheduledEventsAdditionalPublishingTargets"},
    )  # fmt: skip
    reboot = _auto(section, "userInitiatedReboot", path)
    redeploy = _auto(section, "userInitiatedRedeploy", path)
    down = _auto(section, "allInstancesDown", path)
    targets_path = f"{path}.scheduledEventsAdditionalPublishingTargets"
    targets = _object(
        section.get("scheduledEventsAdditionalPublishingTargets"),
        targets_path,
        {"eventGridAndResourceGraph"},
    )
    grid_path = f"{targets_path}.eventGridAndResourceGraph"
    grid = _object(
        targets.get("eventGridAndResourceGraph"), grid_path, {"enable", "scheduledEventsApiVersion"}
    )
    grid_on = _flag(grid.get("enable"), f"{grid_path}.enable")
    grid_version = grid.get("scheduledEventsApiVersion")
    if grid_version is not None and not isinstance(grid_version, str):
        raise _invalid(f"{grid_path}.scheduledEventsApiVersion", "expected a string")

    ppath = "scheduledEventsProfile"
    profile = _object(
        scheduled_events_profile,
        ppath,
        {"terminateNotificationProfile", "osImageNotificationProfile"},
    )
    tpath = f"{ppath}.terminateNotificationProfile"
    terminate = _object(
        profile.get("terminateNotificationProfile"), tpath, {"enable", "notBeforeTimeout"}
    )
    terminate_on = _flag(terminate.get("enable"), f"{tpath}.enable")
    terminate_minutes = _minutes(
        terminate.get("notBeforeTimeout"), f"{tpath}.notBeforeTimeout", 5, 15
    )
    opath = f"{ppath}.osImageNotificationProfile"
    image = _object(
        profile.get("osImageNotificationProfile"), opath, {"enable", "notBeforeTimeout"}
    )
    image_on = _flag(image.get("enable"), f"{opath}.enable")
    image_minutes = _minutes(image.get("notBeforeTimeout"), f"{opath}.notBeforeTimeout", 1, 15)

    new_policy = replace(
        policy,
        auto_approve_user_reboot=_keep(reboot, policy.auto_approve_user_reboot),
        auto_approve_user_redeploy=_keep(redeploy, policy.auto_approve_user_redeploy),
        terminate_notification=_keep(terminate_on, policy.terminate_notification),
        terminate_timeout_minutes=_keep(terminate_minutes, policy.terminate_timeout_minutes),
    )
    new_extras = replace(
        extras,
        all_instances_down=_keep(down, extras.all_instances_down),
        event_grid_and_resource_graph=_keep(grid_on, extras.event_grid_and_resource_graph),
        scheduled_events_api_version=grid_version or extras.scheduled_events_api_version,
        os_image_notification=_keep(image_on, extras.os_image_notification),
        os_image_timeout_minutes=_keep(image_minutes, extras.os_image_timeout_minutes),
    )
    return new_policy, new_extras


def _keep(given: _T | None, current: _T) -> _T:
    return current if given is None else given


def render_policy(policy: ScopePolicy, extras: Extras) -> dict[str, Any]:
    """``scheduledEventsPolicy`` as ARM returns it."""
    grid: dict[str, Any] = {"enable": extras.event_grid_and_resource_graph}
    if extras.scheduled_events_api_version is not None:
        grid["scheduledEventsApiVersion"] = extras.scheduled_events_api_version
    return {
        "userInitiatedRedeploy": {"automaticallyApprove": policy.auto_approve_user_redeploy},
        "userInitiatedReboot": {"automaticallyApprove": policy.auto_approve_user_reboot},
        "allInstancesDown": {"automaticallyApprove": extras.all_instances_down},
        "scheduledEventsAdditionalPublishingTargets": {"eventGridAndResourceGraph": grid},
    }


def render_profile(policy: ScopePolicy, extras: Extras) -> dict[str, Any]:
    """``scheduledEventsProfile`` as ARM returns it."""
    return {
        "terminateNotificationProfile": {
            "enable": policy.terminate_notification,
            "notBeforeTimeout": f"PT{policy.terminate_timeout_minutes}M",
        },
        "osImageNotificationProfile": {
            "enable": extras.os_image_notification,
            "notBeforeTimeout": f"PT{extras.os_image_timeout_minutes}M",
        },
    }
