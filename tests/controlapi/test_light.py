"""The CLI's control commands load the control API client lazily: importing it must load
nothing of the emulator and no server framework (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

EMULATOR = ("forewarn.fabric", "forewarn.fleet", "forewarn.store", "forewarn.imds",
            "forewarn.control.", "forewarn.server", "forewarn.scenarios", "forewarn.cli",
            "forewarn.testing", "forewarn.agent", "forewarn.client")  # fmt: skip
FRAMEWORKS = ("starlette", "uvicorn", "jinja2", "yaml", "httptools", "uvloop", "sqlite3")


def test_importing_the_control_api_client_loads_nothing_of_the_emulator() -> None:
    code = "import sys, json, forewarn.controlapi.client; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(done.stdout)
    assert "forewarn.controlapi.client" in loaded and "httpx" in loaded
    assert [m for m in loaded if m.startswith(EMULATOR) or m == "forewarn.control"] == []
    assert [m for m in loaded if m.split(".")[0] in FRAMEWORKS] == []
