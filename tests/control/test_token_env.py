"""The token can travel in the environment, where other users cannot read it
(docs/operations/serving.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.liveserver import raw_request
from tests.support.serverproc import ServerProcess

TOKEN = "env-only-s3cret"


def test_a_token_from_the_environment_stays_out_of_the_process_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOREWARN_SERVE_CONTROL_TOKEN", TOKEN)
    server = ServerProcess(tmp_path / "f.db").start()
    try:
        assert server.proc is not None
        cmdline = Path(f"/proc/{server.proc.pid}/cmdline").read_bytes()
        assert TOKEN.encode() not in cmdline
        host = [("Host", f"127.0.0.1:{server.control_port}")]
        assert raw_request(server.control_port, "GET", "/api/v1/clock", host).status_code == 401
        monkeypatch.delenv("FOREWARN_SERVE_CONTROL_TOKEN")
        env = {**os.environ, "FOREWARN_CONTROL": server.control_url, "FOREWARN_TOKEN": TOKEN}
        command = [sys.executable, "-m", "forewarn", "topology"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "web-0" in done.stdout
        env.pop("FOREWARN_TOKEN")
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        assert "Bearer" in done.stderr
    finally:
        server.stop()
