"""Fixtures for the store tests: a database file and fabrics that reopen it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forewarn.fabric import Clock, Fabric
from forewarn.store import SQLiteStore
from tests.support.fabrics import T0, make_fabric


class Database:
    """One database file; ``open`` starts a fabric on it, ``restart`` closes and reopens."""

    def __init__(self, path: Path, clock: Clock) -> None:
        self.path = path
        self.clock = clock
        self.stores: list[SQLiteStore] = []

    def open(self, **config: Any) -> Fabric:
        store = SQLiteStore(self.path)
        self.stores.append(store)
        return make_fabric(store=store, clock=self.clock, **config)

    def restart(self, **config: Any) -> Fabric:
        self.stores[-1].close()
        return self.open(**config)

    def close(self) -> None:
        for store in self.stores:
            store.close()


@pytest.fixture
def clock() -> Clock:
    return Clock.virtual(start=T0)


@pytest.fixture
def database(tmp_path: Path, clock: Clock) -> Iterator[Database]:
    db = Database(tmp_path / "forewarn.db", clock)
    yield db
    db.close()
