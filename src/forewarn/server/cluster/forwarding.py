"""The control API of a scaled-out fleet: reads served here, changes made by the leader.

``LeaderForwarding`` sits inside the control API's access guard (so Host, Origin and the
token are checked here first). On a follower, a state-changing request is sent on to
the leader's control URL (from the ``leader`` row) with its body, content type and
token, and the leader's answer is returned as it is. The leader stamps each such answer
with ``X-Forewarn-Seq`` (its change-log head once the change is durable), and the
follower answers only once its own views include that change (bounded), so a caller
that triggers an operation here and then reads here sees it.

A follower whose replication is down answers ``/healthz`` with 503 (its views are going
stale), as does a leader from the moment it finds it no longer leads, and any process
the database has not vouched for lately (its ``Standing``: it stopped for a while). A
change sent to a leader in that state waits a moment for the leader to know whether it
still leads, then is made there or forwarded. When the database
cannot be reached, the cluster status and changes sent to a follower are 503 with the
reason, within about a second. It also serves ``GET /api/v1/cluster``: this process, the
leader, and every live member with its replication lag (what ``forewarn status`` prints).
"""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from forewarn.fabric import StoreUnavailable
from forewarn.imds.segments import raw_path
from forewarn.server.cluster.leadership import Cluster

__all__ = ["FORWARDED_HEADER", "SEQ_HEADER", "LeaderForwarding"]

SEQ_HEADER = b"x-forewarn-seq"
FORWARDED_HEADER = b"x-forewarn-forwarded"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Headers a forwarded request keeps (the guard has checked the rest here).
_KEPT = frozenset({b"content-type", b"authorization", b"accept"})
#: The longest a follower waits for its views to include what the leader just did.
CATCH_UP_SECONDS = 2.0
CLUSTER_PATH = "/api/v1/cluster"


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, data: Any) -> None:
    await _answer(send, status, msgspec.json.encode(data), [(b"content-type", b"application/json")])


class LeaderForwarding:
    """ASGI middleware: forward changes to the leader, serve the cluster status."""

    def __init__(self, app: ASGIApp, cluster: Cluster) -> None:
        self.app = app
        self.cluster = cluster

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if scope["path"] == CLUSTER_PATH:
            await self._status(method, send)
        elif scope["path"] == "/healthz" and not self.cluster.healthy():
            reason = "this follower's views are not being kept current: replication is down"
            await _json(send, 503, {"status": "unhealthy", "reason": reason})
        elif method in SAFE_METHODS:
            await self.app(scope, receive, send)
        else:
            standing = self.cluster.fabric.standing
            if self.cluster.leading and not standing.current():  # it may have been deposed
                await standing.wait(CATCH_UP_SECONDS)  # (the leader checks at once)
            if self.cluster.leading:
                await self.app(scope, receive, self._stamped(send))
            else:
                await self._forward(scope, receive, send)

    async def _status(self, method: str, send: Send) -> None:
        if method not in ("GET", "HEAD"):
            message = f"{method} is not allowed on {CLUSTER_PATH}; allowed: GET, HEAD"
            await _json(send, 405, {"error": message})
            return
        try:
            status = await self.cluster.status()
        except StoreUnavailable as exc:
            reason = f"the fleet's state cannot be read now: {exc}"
            await _json(send, 503, {"error": reason, "member": self.cluster.member})
            return
        await _json(send, 200, status)

    def _stamped(self, send: Send) -> Send:
        """The leader's answer, with the log head that includes its change."""

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (SEQ_HEADER, b"%d" % self.cluster.applied)]
                message = {**message, "headers": headers}
            await send(message)

        return stamped

    async def _forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(k, v) for k, v in scope["headers"] if k in _KEPT]
        if any(k == FORWARDED_HEADER for k, _ in scope["headers"]):
            await _json(send, 503, {"error": "the fleet's leadership is changing; retry"})
            return
        try:
            url = await self.cluster.leader_url()
        except StoreUnavailable as exc:
            await _json(send, 503, {"error": f"cannot find the fleet's leader now: {exc}"})
            return
        if not url:
            await _json(send, 503, {"error": "no process leads the fleet yet; retry"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        target = url.rstrip("/") + raw_path(scope)  # as sent: decoded, it might route elsewhere
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        try:
            response = await self.cluster.leader_http.request(
                scope["method"], target, content=body, headers=[*headers, (FORWARDED_HEADER, b"1")]
            )
        except httpx.HTTPError as exc:
            self.cluster.forget_leader()  # it may have just died: read the row again next time
            await _json(send, 503, {"error": f"cannot reach the fleet's leader at {url}: {exc}"})
            return
        seq = response.headers.get(SEQ_HEADER.decode())
        if seq is not None and seq.isdigit():
            await self.cluster.wait_applied(int(seq), CATCH_UP_SECONDS)
        kept = [
            (name.encode("latin-1"), value.encode("latin-1"))
            for name, value in response.headers.items()
            if name in ("content-type", "allow", "www-authenticate")
        ]
        await _answer(send, response.status_code, response.content, kept)
