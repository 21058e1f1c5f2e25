"""Named scenarios played for the dashboard: one at a time, on a thread of their own,
through this server's own control API (exactly what ``forewarn scenario run`` does from
a terminal, so the engine stays a client and never reaches into the platform).

It is the scenario engine's, so it lives here; the composition (``forewarn serve``) hands
``scenario_runs`` to every process it starts, and the dashboard knows it only as its
``ScenarioHook``, so no layer looks upward."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import Any

from forewarn.controlapi import ControlClient, ControlError
from forewarn.fabric import Conflict, NotFoundError
from forewarn.scenarios.library import library_names as _library_names
from forewarn.scenarios.library import library_scenario as _library_scenario
from forewarn.scenarios.model import ScenarioError
from forewarn.scenarios.reaction import reaction_line
from forewarn.scenarios.runner import Runner

__all__ = ["ScenarioRuns", "scenario_runs"]

log = logging.getLogger(__name__)

#: Runs remembered for the dashboard (older ones are forgotten).
KEEP = 20


class ScenarioRuns:
    """The dashboard's ``ScenarioHook``: the shipped library, played in the background."""

    def __init__(self, token: str | None = None) -> None:
        self._token = token
        self._lock = threading.Lock()
        self._runs: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def names(self) -> list[str]:
        return _library_names()

    def runs(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._runs]

    def start(self, name: str, control_url: str) -> dict[str, Any]:
        if name not in _library_names():
            raise NotFoundError(
                f"no scenario called {name!r}; named scenarios: {', '.join(_library_names())}"
            )
        with self._lock:
            busy = next((r for r in self._runs if r["status"] == "running"), None)
            if busy is not None:
                raise Conflict(f"scenario {busy['name']!r} is still playing; wait until it ends")
            run: dict[str, Any] = {
                "id": next(self._ids), "name": name, "status": "running",
                "started": time.time(), "ended": None, "detail": "",
            }  # fmt: skip
            self._runs = [*self._runs[-(KEEP - 1) :], run]
        thread = threading.Thread(
            target=self._play, args=(run, control_url), name=f"scenario-{name}", daemon=True
        )
        thread.start()
        return dict(run)

    def _play(self, run: dict[str, Any], control_url: str) -> None:
        status, detail = "failed", ""
        try:
            with ControlClient(control_url, self._token) as control:
                outcome = Runner(control).run(_library_scenario(run["name"]))
            failed = [c.what for c in outcome.checks if not c.ok]
            status = "held" if outcome.ok else "not held"
            held = "every expectation held" if outcome.ok else "; ".join(failed[:3])
            detail = f"{held}; {reaction_line(outcome.reactions)}"
        except (ScenarioError, ControlError) as exc:
            detail = str(exc)
        except Exception as exc:  # a bug of the engine must not go unnoticed, nor kill us
            log.exception("playing scenario %s failed", run["name"])
            detail = f"the scenario engine failed: {exc!r}"
        with self._lock:
            run.update(status=status, detail=detail, ended=time.time())


def scenario_runs(token: str | None) -> ScenarioRuns:
    """A new hook for one server process (picklable by name: workers build their own)."""
    return ScenarioRuns(token)
