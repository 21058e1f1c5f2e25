"""Proving a webhook wants the events before any is sent: Event Grid's validation event
(answered with its ``validationResponse``, or later by a GET of its ``validationUrl``), or
the CloudEvents webhook handshake (``OPTIONS`` with ``WebHook-Request-Origin``)."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass

import httpx

from forewarn.eventgrid.payloads import validation_event
from forewarn.eventgrid.subscriptions import SubscriptionSpec

__all__ = ["ORIGIN", "Outcome", "handshake"]

ORIGIN = "eventgrid.azure.net"


@dataclass(frozen=True, slots=True)
class Outcome:
    """``state``: Succeeded, AwaitingManualAction or Failed; ``reason`` says why."""

    state: str
    reason: str
    code: str


def _unreachable(spec: SubscriptionSpec, exc: httpx.HTTPError) -> Outcome:
    why = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        why = "timed out"
    return Outcome(
        "Failed",
        f"Webhook validation handshake failed for {spec.endpoint}: unreachable ({why[:200]}).",
        "",
    )


async def handshake(
    client: httpx.AsyncClient,
    spec: SubscriptionSpec,
    topic: str,
    validation_url: str,
    now: float,
) -> Outcome:
    if spec.schema == "CloudEventSchemaV1_0":
        return await _cloudevents(client, spec)
    code = secrets.token_hex(16).upper()
    event = validation_event(
        str(uuid.uuid4()), topic, "", code, f"{validation_url}?code={code}", now
    )
    try:
        response = await client.post(
            spec.endpoint, json=[event], headers={"aeg-event-type": "SubscriptionValidation"}
        )
    except httpx.HTTPError as exc:
        return _unreachable(spec, exc)
    if response.status_code != 200:
        return Outcome(
            "Failed",
            f"Webhook validation handshake failed for {spec.endpoint}: it answered "
            f"{response.status_code} to the SubscriptionValidationEvent (expected 200).",
            "",
        )
    try:
        body = response.json()
    except ValueError:
        body = None
    given = body.get("validationResponse") if isinstance(body, dict) else None
    if given is None:
        return Outcome(
            "AwaitingManualAction",
            "The webhook answered 200 without validationResponse: GET the validationUrl "
            "it was sent to finish the handshake.",
            code,
        )
    if given != code:
        return Outcome(
            "Failed",
            f"Webhook validation handshake failed for {spec.endpoint}: validationResponse "
            "does not match the validationCode sent.",
            "",
        )
    return Outcome("Succeeded", "", code)


async def _cloudevents(client: httpx.AsyncClient, spec: SubscriptionSpec) -> Outcome:
    try:
        response = await client.options(spec.endpoint, headers={"WebHook-Request-Origin": ORIGIN})
    except httpx.HTTPError as exc:
        return _unreachable(spec, exc)
    allowed = response.headers.get("WebHook-Allowed-Origin", "")
    if response.status_code != 200 or allowed not in (ORIGIN, "*"):
        return Outcome(
            "Failed",
            f"CloudEvents webhook handshake failed for {spec.endpoint}: the OPTIONS request "
            f"got {response.status_code} with WebHook-Allowed-Origin {allowed[:80]!r} "
            f"(expected 200 and {ORIGIN} or *).",
            "",
        )
    return Outcome("Succeeded", "", "")
