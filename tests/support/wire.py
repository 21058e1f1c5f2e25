"""Wire facts the tests check against, written down once from the contract (not imported
from the package, so a wrong table in the code fails the tests)."""

from __future__ import annotations

#: Every supported Scheduled Events api-version, oldest first.
VERSIONS = (
    "2017-03-01",
    "2017-08-01",
    "2017-11-01",
    "2019-01-01",
    "2019-04-01",
    "2019-08-01",
    "2020-07-01",
)
