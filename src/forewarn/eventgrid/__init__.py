"""Scheduled Events seen from outside the VM: each public state of an event (Scheduled,
Started, Completed, Canceled) for scopes that publish them, pushed to Event Grid
subscribers (webhooks, Event Grid schema or CloudEvents 1.0) and kept as Resource Graph
rows (``maintenanceresources``).

The ``Ledger`` observes the fabric; the ``EventGrid`` hub keeps subscriptions and
delivers off the event loop's hot path.
"""

from forewarn.eventgrid.hub import EventGrid
from forewarn.eventgrid.ledger import Ledger, Notice
from forewarn.eventgrid.naming import ArmNames
from forewarn.eventgrid.subscriptions import SubscriptionError, parse_subscription

__all__ = ["ArmNames", "EventGrid", "Ledger", "Notice", "SubscriptionError", "parse_subscription"]
