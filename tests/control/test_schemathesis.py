"""The OpenAPI document checked against the running app by schemathesis (issue 6 §4).

Every documented operation gets generated requests, valid and invalid, on a throwaway
fleet (in-memory store, virtual clock); each answer must be documented (status, media
type, body schema), valid input must not be refused as invalid and invalid input must
not be accepted. State-changing operations are included.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings

from tests.control.conftest import reported_app

TOKEN = "schemathesis"


#: One throwaway fleet (in-memory store, virtual clock) for the whole module.
APP = reported_app(token=TOKEN)  # the rehearsal report included
schema = schemathesis.openapi.from_asgi(
    "/openapi.json", APP.asgi, headers={"Authorization": f"Bearer {TOKEN}"}
).exclude(path="/api/v1/stream")  # never ends by design: tests/dashboard reads it


@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_the_server_keeps_every_promise_of_its_openapi_document(case: Any) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"})
