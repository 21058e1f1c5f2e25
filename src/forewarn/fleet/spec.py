"""The fleet file format: the msgspec Structs that parse a fleet file, and the JSON Schema
generated from them (``fleet_schema``), so the documentation cannot drift from the parser;
and the commented example fleets shipped in the package.

Descriptions and schema-only bounds live on the fields (``Annotated``): editors show them,
while the checks that run (and their messages, which say why) are in ``fleetfile``.
"""

from __future__ import annotations

from importlib import resources
from typing import Annotated, Any, Literal

import msgspec

from forewarn.fleet.errors import FleetError

__all__ = [
    "EXAMPLE_FLEETS",
    "FleetSpec",
    "ScopeSpec",
    "TerminateSpec",
    "VmSpec",
    "example_fleet_text",
    "fleet_schema",
]

#: Commented example fleets shipped in the package (``forewarn fleet init --example``):
#: name → (file in this package, what it shows).
EXAMPLE_FLEETS: dict[str, tuple[str, str]] = {
    "demo": ("demo-fleet.yaml", "the built-in demo fleet: one scope of every kind on 4 hosts"),
    "aks": ("fleets/aks.yaml", "an AKS-like node pool: a scale set in several placement groups"),
    "three-tier": ("fleets/three-tier.yaml", "a 3-tier app over availability sets"),
    "thousand": ("fleets/thousand.yaml", "1,000 VMs in scale sets and availability sets"),
}


def _doc(text: str, **schema: Any) -> msgspec.Meta:
    """A field's description and schema-only bounds.

    The bounds go to the JSON Schema alone (``extra_json_schema``): the checks in
    ``_build`` stay the ones that run, so their messages (which say why) are kept.
    """
    return msgspec.Meta(description=text, extra_json_schema=schema or None)


_Domain = Annotated[int | None, _doc("Its domain (0-based); default: round robin.", minimum=0)]


# gc=False: plain values only, and a big fleet makes one per VM.
class VmSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    """One VM written out by hand; anything left out is assigned."""

    name: Annotated[str, _doc("The VM's name (a role instance's, in a cloud service).")]
    host: Annotated[str | None, _doc("Host it runs on; default: assigned round robin.")] = None
    update_domain: _Domain = None
    fault_domain: _Domain = None
    zone: Annotated[str | None, _doc("Availability zone; default: the scope's zones in turn.")] = (
        None
    )
    address: Annotated[
        str | None, _doc("Loopback address it answers on; default: the next 127.1.x.y.")
    ] = None
    port: Annotated[
        int | None,
        _doc("A port of its own, answered whatever the source address.", minimum=1, maximum=65535),
    ] = None
    spot: Annotated[bool | None, _doc("A Spot VM (Preempt events); default: the scope's.")] = None


class TerminateSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Terminate notifications of a scale set (Terminate events on scale-in)."""

    enabled: Annotated[bool, _doc("Whether deleting an instance announces it.")] = True
    timeout_minutes: Annotated[
        int, _doc("The notice a Terminate event gives.", minimum=5, maximum=15)
    ] = 5


class ScopeSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One scope: who sees whose events (a standalone VM, an availability set, a scale
    set's placement groups, or a cloud service)."""

    kind: Annotated[
        Literal["standalone", "availability_set", "scale_set", "cloud_service"],
        _doc("What kind of scope."),
    ]
    name: Annotated[str, _doc("The scope's name; generated VM names start with it.")]
    vms: Annotated[
        int | list[VmSpec] | None,
        _doc(
            "How many VMs (named NAME-0… in an availability set, NAME_0… in a scale set), "
            "or the VMs written out. A standalone scope is one VM called NAME.",
            minimum=1,
        ),
    ] = None
    roles: Annotated[
        dict[str, int] | None,
        _doc("A cloud service's roles and instance counts, e.g. {FrontEnd: 2}."),
    ] = None
    update_domains: Annotated[
        int, _doc("Update domains; platform maintenance walks them one at a time.", minimum=1)
    ] = 5
    fault_domains: Annotated[int, _doc("Fault domains.", minimum=1)] = 2
    placement_groups: Annotated[
        int,
        _doc("A scale set's placement groups: each is a scope of its own (NAME/pg0…).", minimum=1),
    ] = 1
    zones: Annotated[list[str] | None, _doc("Availability zones, given to VMs in turn.")] = None
    spot: Annotated[bool, _doc("Spot VMs (Preempt on eviction).")] = False
    gpu: Annotated[
        bool, _doc("A GPU scale set: with fault_domains 1, each VM sees only its own events.")
    ] = False
    terminate_notification: Annotated[
        TerminateSpec | None, _doc("A scale set's terminate notifications (scale-in).")
    ] = None
    auto_approve: Annotated[
        list[Literal["reboot", "redeploy"]] | None,
        _doc("User operations whose events are created Started (no notice)."),
    ] = None
    preview_limit: Annotated[
        bool, _doc("At most 10 simultaneous user operations (the 2017 preview limit).")
    ] = False
    tags: Annotated[
        dict[str, str] | None,
        _doc("Azure tags of the scope's VMs (over the fleet's), in instance metadata and ARM."),
    ] = None
    event_grid: Annotated[
        bool,
        _doc(
            "Publish the scope's events to Event Grid and Resource Graph, Completed and "
            "Canceled included (ARM: scheduledEventsAdditionalPublishingTargets."
            "eventGridAndResourceGraph)."
        ),
    ] = False


# dict=True only so that a spec can remember where it came from (never stored).
class FleetSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, dict=True):
    """A forewarn fleet file: the scopes and VMs of a simulated Azure fleet."""

    scopes: Annotated[list[ScopeSpec], _doc("The fleet's scopes, in order.", minItems=1)]
    location: Annotated[str, _doc("Azure region shown in instance metadata.")] = "westeurope"
    hosts: Annotated[
        int | None,
        _doc("Hosts VMs are spread over (at least; the pool grows when needed).", minimum=1),
    ] = None
    default_vm: Annotated[
        str | None, _doc("The VM a plain request (from 127.0.0.1) speaks as; default: the first.")
    ] = None
    address_prefix: Annotated[
        str,
        _doc("First two octets of automatic addresses.", pattern=r"^\d{1,3}\.\d{1,3}$"),
    ] = "127.1"
    port_base: Annotated[
        int | None,
        _doc("VM i also answers on port port_base + i.", minimum=1, maximum=65535),
    ] = None
    subscription: Annotated[
        str | None,
        _doc(
            "Subscription id of the fleet's VMs, in instance metadata and ARM.",
            pattern=r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$",
        ),
    ] = None
    resource_group: Annotated[
        str | None, _doc("Resource group of the fleet's ARM resources; default: forewarn.")
    ] = None
    tags: Annotated[
        dict[str, str] | None, _doc("Azure tags of every VM, in instance metadata and ARM.")
    ] = None


def fleet_schema() -> dict[str, Any]:
    """The JSON Schema of fleet files, generated from the Structs that parse them."""
    schema = msgspec.json.schema(FleetSpec)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "forewarn fleet file",
        **schema,
    }


def example_fleet_text(name: str) -> str:
    """The commented YAML of a shipped example fleet (``EXAMPLE_FLEETS``)."""
    try:
        file, _ = EXAMPLE_FLEETS[name]
    except KeyError:
        known = ", ".join(EXAMPLE_FLEETS)
        raise FleetError(f"no example fleet called {name!r}; known: {known}") from None
    return resources.files(__package__).joinpath(file).read_text(encoding="utf-8")
