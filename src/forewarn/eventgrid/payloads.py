"""A notice in the shapes its readers parse: an Event Grid event, a CloudEvents 1.0 event
(both of type ``...MaintenanceResources.ScheduledEventEmitted`` whose ``data.resourceInfo``
is the event as a resource), and a Resource Graph row of ``maintenanceresources``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from forewarn.eventgrid.ledger import Notice
from forewarn.eventgrid.naming import EVENT_TYPE
from forewarn.fleet.azure import TENANT

__all__ = [
    "EMITTED",
    "cloud_event",
    "event_grid_event",
    "iso_time",
    "resource_graph_row",
    "validation_event",
]

EMITTED = "Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted"
VALIDATION = "Microsoft.EventGrid.SubscriptionValidationEvent"
DATA_API_VERSION = "2024-07-01"


def iso_time(epoch: float) -> str:
    """ISO 8601 in UTC with a ``Z``, as Event Grid writes ``eventTime``."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _data(notice: Notice) -> dict[str, Any]:
    return {
        "resourceInfo": {
            "id": notice.arm_id,
            "name": notice.event_id,
            "type": EVENT_TYPE,
            "location": notice.location,
            "properties": notice.properties(),
            "tags": {},
        },
        "operationalInfo": {"resourceEventTime": iso_time(notice.at)},
        "apiVersion": DATA_API_VERSION,
    }


def event_grid_event(notice: Notice, topic: str) -> dict[str, Any]:
    """The Event Grid schema (one element of the array a webhook receives)."""
    return {
        "id": notice.id,
        "topic": topic,
        "subject": notice.arm_id,
        "eventType": EMITTED,
        "eventTime": iso_time(notice.at),
        "data": _data(notice),
        "dataVersion": "1",
        "metadataVersion": "1",
    }


def cloud_event(notice: Notice, topic: str) -> dict[str, Any]:
    """CloudEvents 1.0, structured mode (the body of ``application/cloudevents+json``)."""
    return {
        "specversion": "1.0",
        "id": notice.id,
        "source": topic,
        "subject": notice.arm_id,
        "type": EMITTED,
        "time": iso_time(notice.at),
        "datacontenttype": "application/json",
        "data": _data(notice),
    }


def validation_event(
    event_id: str, topic: str, subject: str, code: str, url: str, at: float
) -> dict[str, Any]:
    """The subscription validation event of the Event Grid schema's handshake."""
    return {
        "id": event_id,
        "topic": topic,
        "subject": subject,
        "eventType": VALIDATION,
        "eventTime": iso_time(at),
        "data": {"validationCode": code, "validationUrl": url},
        "dataVersion": "2",
        "metadataVersion": "1",
    }


def resource_graph_row(notice: Notice, subscription: str, resource_group: str) -> dict[str, Any]:
    """A ``maintenanceresources`` row (Resource Graph lower-cases the group)."""
    return {
        "id": notice.arm_id,
        "name": notice.event_id,
        "type": EVENT_TYPE,
        "tenantId": TENANT,
        "kind": "",
        "location": notice.location,
        "resourceGroup": resource_group.lower(),
        "subscriptionId": subscription,
        "managedBy": "",
        "sku": None,
        "plan": None,
        "properties": notice.properties(),
        "tags": {},
        "identity": None,
        "zones": None,
        "extendedLocation": None,
    }
