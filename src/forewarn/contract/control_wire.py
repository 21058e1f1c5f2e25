"""Names of forewarn's control API that its server and its clients both write: here, in
the contract, because the emulator never imports its own client (``forewarn.controlapi``)
and the client nothing of the emulator, yet each must spell them the same.
"""

from __future__ import annotations

__all__ = ["PIN_PARAM", "VERDICT_HEADER", "VERDICT_PARAM"]

#: The response header naming the kept verdict an answer of ``GET /api/v1/reactions`` or
#: ``/api/v1/report`` was cut from ...
VERDICT_HEADER = "Forewarn-Verdict"
#: ... and the query parameter that asks for that very verdict again (another page, the
#: HTML page beside the JSON), not one graded since.
VERDICT_PARAM = "verdict"
#: ``pin=true``: keep the verdict answered for its reader's next requests by id, beside
#: any graded after it (``report --junit`` and ``--html`` ask more than once).
PIN_PARAM = "pin"
