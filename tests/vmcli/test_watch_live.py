"""``forewarn watch`` on a terminal: the live table drawn over itself, this VM's events in
bold yellow, within the terminal's 80 columns, the cursor hidden meanwhile and shown again
after Ctrl-C; ``NO_COLOR`` gets the same table without a style."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

from tests.support.cli import cli_env
from tests.support.serverproc import ServerProcess, trigger
from tests.vmcli.conftest import WEB0

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def watch_on_a_terminal(server: ServerProcess, until: str, **env: str) -> str:
    """What ``forewarn watch`` wrote to a terminal 80 columns wide until ``until`` showed,
    then after Ctrl-C."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "forewarn", "watch", "--url", server.imds_url,
         "--source-address", WEB0, "--interval", "0.1"],
        stdin=slave, stdout=slave, stderr=subprocess.PIPE,
        env={k: v for k, v in cli_env(env, columns=80).items()
             if k != "NO_COLOR" or "NO_COLOR" in env},
    )  # fmt: skip
    os.close(slave)
    screen = b""
    deadline = time.monotonic() + 60
    try:
        while until.encode() not in screen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                screen += os.read(master, 65536)
        time.sleep(0.6)  # a redraw or two more
        proc.send_signal(signal.SIGINT)
        while True:
            try:
                chunk = os.read(master, 65536) if select.select([master], [], [], 5)[0] else b""
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
    finally:
        assert proc.wait(timeout=30) == 0
        os.close(master)
    return screen.decode()


def test_the_live_view_on_a_terminal(server: ServerProcess) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    screen = watch_on_a_terminal(server, event_id)
    assert screen.startswith("\x1b[?25l") and screen.rstrip().endswith("\x1b[?25h")
    assert "\x1b[1;33m" in screen  # this VM's event, bold yellow
    assert re.search(r"\x1b\[\d+F\x1b\[J", screen), "each frame drawn over the last"
    frames = screen.split("\x1b[J")
    last = ANSI.sub("", frames[-1]).replace("\r", "")
    lines = last.splitlines()
    assert f"Scheduled Events at {server.imds_url} as web-0" in last, last
    assert any(event_id in line for line in lines), last
    assert all(len(line) <= 80 for line in lines), last


def test_no_color_draws_the_same_view_without_a_style(server: ServerProcess) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    screen = watch_on_a_terminal(server, event_id, NO_COLOR="1")
    assert event_id in screen
    assert not re.search(r"\x1b\[[0-9;]*m", screen), "a style despite NO_COLOR"
