"""``ControlClient``: every call a user of the control API makes, typed, over one httpx
client; every way of failing is a ``ControlError`` whose message is one line.

The URL and token are checked before anything is sent (a malformed ``--control``, a
token that cannot travel in a header); proxies never apply (``trust_env=False``: the
server is usually on loopback); each call waits ``timeout`` seconds at most.
"""

from __future__ import annotations

from typing import Any, BinaryIO, TypedDict, Unpack
from urllib.parse import quote

import httpx

from forewarn.controlapi.errors import (
    ControlRefused,
    ControlSettingError,
    ControlUnreachable,
    NotControlApi,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "ControlClient",
    "TriggerOptions",
    "check_base_url",
    "read_answer",
    "segment",
]

#: Seconds one call may take (advancing a virtual clock over many timers takes a while).
DEFAULT_TIMEOUT = 30.0
API = "/api/v1"


class TriggerOptions(TypedDict, total=False):
    """``trigger``'s options: ``notice`` seconds of the server's clock, the event's
    ``description``, the ``duration`` announced (DurationInSeconds)."""

    notice: float | None
    description: str | None
    duration: int | None


def check_base_url(url: str, origin: str = "control URL") -> str:
    """``url`` as the base of every request, or ControlSettingError naming what is wrong.

    ``origin`` says where the URL came from (``--control``, ``FOREWARN_CONTROL``…).
    """
    given = f"{origin} {url!r}"
    if "://" not in url:
        raise ControlSettingError(f"{given} is missing its scheme: use http://{url.lstrip('/')}")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ControlSettingError(
            f"{given} is not a valid URL ({exc}); expected http://HOST:PORT"
        ) from None
    if parsed.scheme not in ("http", "https"):
        raise ControlSettingError(
            f"{given}: the control API speaks http or https, not {parsed.scheme}"
        )
    if not parsed.host:
        raise ControlSettingError(f"{given} names no host; expected http://HOST:PORT")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ControlSettingError(f"{given}: port {parsed.port} is outside 1..65535")
    return url.rstrip("/")


def segment(value: str) -> str:
    """``value`` as one path segment: a name never reaches another route (``a/../x``)."""
    return quote(value, safe="")


def _bearer(token: str | None, origin: str) -> dict[str, str]:
    if not token:
        return {}
    if not all("!" <= ch <= "~" for ch in token):
        raise ControlSettingError(
            f"{origin} must be printable ASCII without spaces (a Bearer token)"
        )
    return {"Authorization": f"Bearer {token}"}


def _error_text(response: httpx.Response) -> str:
    """The server's ``{"error": ...}`` message, else the body as it came."""
    try:
        return str(response.json().get("error", response.text))
    except (ValueError, AttributeError):
        return response.text


def read_answer(response: httpx.Response, base: str) -> Any:
    """What an answer means: its decoded JSON (or text), or the ControlError it is."""
    method, path = response.request.method, response.request.url.path
    if response.status_code >= 400:
        error = _error_text(response)
        if response.status_code == 404 and error == "Not found":
            raise NotControlApi(f"{base} is not a forewarn control API (the metadata endpoint?)")
        raise ControlRefused(error, response.status_code, method, path)
    if response.headers.get("content-type", "").startswith("application/json"):
        try:
            return response.json()
        except ValueError:
            raise NotControlApi(
                f"{base} answered malformed JSON; is it a forewarn control API?"
            ) from None
    return response.text


class ControlClient:
    """A client of one server's control API (``base_url``, optional Bearer ``token``).

    ``origin`` and ``token_origin`` name where the URL and token came from in error
    messages (the CLI passes ``--control`` or ``FOREWARN_CONTROL``…).
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        origin: str = "control URL",
        token_origin: str = "the token",
    ) -> None:
        self.base = check_base_url(base_url, origin)
        self._http = httpx.Client(
            base_url=self.base,
            headers=_bearer(token, token_origin),
            timeout=timeout,
            trust_env=False,
        )

    # ------------------------------------------------------------------ any route

    def response(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """``method path`` as it was answered (only an unreachable server is an error)."""
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ControlUnreachable(
                f"cannot reach the control API at {self.base} ({exc}); is `forewarn serve` running?"
            ) from None

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """``method path``: the decoded JSON (or text) of a successful answer."""
        return read_answer(self.response(method, path, **kwargs), self.base)

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        answer = self.call(method, API + path, **kwargs)
        if isinstance(answer, str):
            raise NotControlApi(
                f"{self.base}{API}{path} answered something that is not JSON; "
                "is it a forewarn control API?"
            )
        return answer

    # ------------------------------------------------------------------ the routes

    def clock(self) -> dict[str, Any]:
        """The server's clock: ``now``, ``iso``, ``next_due``, whether it is virtual…"""
        out: dict[str, Any] = self._json("GET", "/clock")
        return out

    def advance(self, seconds: float) -> dict[str, Any]:
        """Move a virtual clock on by ``seconds``, firing what comes due; the clock after."""
        out: dict[str, Any] = self._json("POST", "/clock/advance", json={"seconds": seconds})
        return out

    def reset(self) -> dict[str, Any]:
        """Reset the fleet for a new drill: VMs back, events and operations cleared."""
        out: dict[str, Any] = self._json("POST", "/fleet/reset", json={})
        return out

    def copy(self, path: str, out: BinaryIO) -> None:
        """Write the body of ``GET path`` (under the API) to ``out`` as it arrives: a
        million-VM topology is never held whole (an error answer raises, as ``call``)."""
        try:
            with self._http.stream("GET", API + path) as response:
                if response.status_code >= 400:
                    response.read()
                    read_answer(response, self.base)
                for chunk in response.iter_bytes():
                    out.write(chunk)
        except httpx.HTTPError as exc:
            raise ControlUnreachable(
                f"cannot reach the control API at {self.base} ({exc}); is `forewarn serve` running?"
            ) from None
        out.flush()

    def topology(self) -> dict[str, Any]:
        """Scopes and their VMs."""
        out: dict[str, Any] = self._json("GET", "/topology")
        return out

    def vms(self) -> list[dict[str, Any]]:
        """Every VM and its status."""
        out: list[dict[str, Any]] = self._json("GET", "/vms")
        return out

    def vm(self, name: str) -> dict[str, Any]:
        """One VM's row and its ``scope_kind``, without the topology (404: no such VM)."""
        out: dict[str, Any] = self._json("GET", f"/vms/{segment(name)}")
        return out

    def events(self) -> list[dict[str, Any]]:
        """Every live event."""
        out: list[dict[str, Any]] = self._json("GET", "/events")
        return out

    def event(self, event_id: str) -> dict[str, Any]:
        """One live event (its status, who approved it…)."""
        out: dict[str, Any] = self._json("GET", f"/events/{segment(event_id)}")
        return out

    def event_action(self, event_id: str, action: str) -> dict[str, Any]:
        """``approve``, ``start``, ``cancel`` or ``complete`` an event; the event after."""
        # a JSON body: never mistaken for a browser's form post
        out: dict[str, Any] = self._json(
            "POST", f"/events/{segment(event_id)}/{segment(action)}", json={}
        )
        return out

    def operations(self) -> list[dict[str, Any]]:
        """Every operation."""
        out: list[dict[str, Any]] = self._json("GET", "/operations")
        return out

    def operation(self, operation_id: str) -> dict[str, Any]:
        """One operation."""
        out: dict[str, Any] = self._json("GET", f"/operations/{segment(operation_id)}")
        return out

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Start an operation described by ``body`` (``kind``, ``target``…)."""
        out: dict[str, Any] = self._json("POST", "/operations", json=body)
        return out

    def trigger(self, kind: str, target: str, **options: Unpack[TriggerOptions]) -> dict[str, Any]:
        """Start operation ``kind`` on ``target``; what is not given (or None) takes the
        server's default."""
        given = {"notice_seconds": options.get("notice"), "description": options.get("description"),
                 "duration_seconds": options.get("duration")}  # fmt: skip
        body = {"kind": kind, "target": target}
        return self.create(body | {k: v for k, v in given.items() if v is not None})

    def roll_out_region(
        self, kind: str, wave_hosts: int | None = None, **options: Unpack[TriggerOptions]
    ) -> dict[str, Any]:
        """Start a rolling ``kind`` over the whole region, ``wave_hosts`` hosts a wave (None:
        the server's default); its first wave's operation."""
        given = {"notice_seconds": options.get("notice"), "description": options.get("description"),
                 "duration_seconds": options.get("duration"), "wave_hosts": wave_hosts}  # fmt: skip
        body = {"kind": kind, "region": True}
        return self.create(body | {k: v for k, v in given.items() if v is not None})

    def rollouts(self) -> list[dict[str, Any]]:
        """Every rollout (a scope's or the region's), where it stands."""
        out: list[dict[str, Any]] = self._json("GET", "/rollouts")
        return out

    def document(self, vm: str, api_version: str | None = None) -> dict[str, Any]:
        """The document ``vm`` gets now (without counting as its request)."""
        params = {} if api_version is None else {"api-version": api_version}
        out: dict[str, Any] = self._json("GET", f"/documents/{segment(vm)}", params=params)
        return out

    def history(
        self, *, operation_id: str | None = None, last: int | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """History entries, oldest first: of one operation, the ``last`` N, at most ``limit``."""
        given = {"operation_id": operation_id, "last": last, "limit": limit}
        params = {k: v for k, v in given.items() if v is not None}
        out: list[dict[str, Any]] = self._json("GET", "/history", params=params)
        return out

    def faults(self) -> list[dict[str, Any]]:
        """The injected endpoint faults not over yet, with the requests each hit."""
        out: list[dict[str, Any]] = self._json("GET", "/faults")
        return out

    def add_fault(self, body: dict[str, Any]) -> dict[str, Any]:
        """Inject an endpoint fault described by ``body`` (``kind``, ``scope``…); the fault."""
        out: dict[str, Any] = self._json("POST", "/faults", json=body)
        return out

    def clear_faults(self) -> list[dict[str, Any]]:
        """Clear every injected fault; the faults cleared."""
        out: list[dict[str, Any]] = self._json("DELETE", "/faults", json={})
        return out

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
