"""Garbage-collection pauses of the server under test, for bench/fleet_tail.py.

The benchmark puts this directory first on the server's PYTHONPATH (never the project's
code), so Python imports it at start. When ``FOREWARN_BENCH_GC_LOG`` names a file
(``{pid}`` in the name: one per process), every collection of 1 ms or more is written
there at exit (one JSON line: wall time, generation, seconds, objects collected), with a
count of all collections per generation.
A pause of the collector stops the event loop like a blocking call does, so the tail of a
latency benchmark needs to know when they happened.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import time
from typing import Any

#: ``{pid}`` in it becomes the process's id: the workers of ``--workers`` write a file each.
_PATH = os.environ.get("FOREWARN_BENCH_GC_LOG", "").replace("{pid}", str(os.getpid()))


def _install(path: str) -> None:
    started = [0.0]
    long_pauses: list[tuple[float, int, float, int]] = []
    counts = [0, 0, 0]

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        took = time.perf_counter() - started[0]
        generation = int(info.get("generation", 0))
        counts[generation] += 1
        if took >= 0.001:
            long_pauses.append((time.time(), generation, took, int(info.get("collected", 0))))

    def dump() -> None:
        with open(path, "w", encoding="utf-8") as out:
            out.write(json.dumps({"counts": counts}) + "\n")
            for at, generation, took, collected in long_pauses:
                line = {"at": at, "generation": generation, "seconds": took, "collected": collected}
                out.write(json.dumps(line) + "\n")

    gc.callbacks.append(callback)
    atexit.register(dump)


if _PATH:
    _install(_PATH)
