"""The kit names exactly the rules a non-conformant endpoint breaks: the deviations of
Microsoft's mock server (tests/conformance/mockserver.py), and no others."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conformance.conftest import (
    PROBE_RULES,
    Verdicts,
    junit_counts,
    kit,
    lines_fit,
)
from tests.conformance.mockserver import MockEndpoint
from tests.support.cli import cli_env

#: No Metadata check (GET, instance metadata, POST from 2017-08-01), ISO 8601 dates.
PROBE_FAILS = {"R5.required", "R5.wrong-value", "R5.instance", "R6.post-2017-08-01",
               "D8.not-before"}  # fmt: skip
#: Completed events, ISO dates, a new EventId per state, only the first id honoured.
FOLLOW_FAILS = {"D4.status", "D8.not-before", "D3.same-id", "P1.several-ids"}


def test_the_probes_name_each_rule_the_mock_breaks(mock: MockEndpoint, short_tmp: Path) -> None:
    (event_id,) = mock.schedule("Reboot")
    ran = kit(mock.url, "--rate", "50", "--record", str(short_tmp / "mock.jsonl"))
    assert ran.code == 1, ran.stderr
    lines_fit(ran.stdout)
    lines = ran.stdout.splitlines()
    failed = {line.split()[1] for line in lines if line.startswith("FAIL ")}
    assert failed == PROBE_FAILS
    passed = {line.split()[1] for line in lines if line.startswith("PASS ")}
    assert passed == PROBE_RULES - PROBE_FAILS - {"R8.rate-limit"}
    # a FAIL says what the contract expects and what came instead
    at = lines.index(next(line for line in lines if line.startswith("FAIL R5.required ")))
    assert lines[at + 1] == (
        '       expected 400 {"error": "Bad request. Required metadata header not'
    )
    assert lines[at + 3].startswith('       seen     200 {"DocumentIncarnation":2,')
    at = lines.index(next(line for line in lines if line.startswith("FAIL D8.not-before ")))
    seen = " ".join(" ".join(lines[at + 2 : at + 5]).split())
    assert seen.startswith(f"seen every api-version: Scheduled event {event_id} NotBefore '20")
    assert "T" in seen.split("NotBefore")[1]  # ISO 8601
    # and how to hand it back, with the recording
    text = " ".join(lines)
    assert "A FAIL is drift between this endpoint and forewarn's wire contract" in text
    assert f"the recording {short_tmp / 'mock.jsonl'} attached" in text
    assert mock.approved == []  # nothing was approved


def test_follow_names_the_lifecycle_rules_the_mock_breaks(
    mock: MockEndpoint, tmp_path: Path
) -> None:
    junit = tmp_path / "kit.xml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "forewarn", "conformance", mock.url, "--follow", "--approve",
         "--skip-probes", "--interval", "0.25", "--rate", "50", "--timeout", "60", "--json",
         "--junit", str(junit)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(columns=80),
    )  # fmt: skip
    assert proc.stderr is not None
    assert "following events" in proc.stderr.readline()
    assert "no event yet: waiting" in proc.stderr.readline()  # created after: notice seen
    reboot, freeze = mock.schedule("Reboot", "Freeze")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    report = Verdicts.of(stdout)
    assert report.verdict("FAIL") == FOLLOW_FAILS
    assert report.verdict("PASS") >= {"L1.notice", "L3.forward", "L5.removed", "D1.steps",
                                      "P3.approved"}  # fmt: skip
    assert report.detail("D3.same-id").startswith(f"{reboot} (Scheduled) came back as ")
    assert report.detail("P1.several-ids") == f"{freeze} started only once approved again alone"
    # the kit approved both at once, then the one left behind alone
    assert mock.approved == [reboot, freeze]
    assert f"approved {reboot}, {freeze}: 200" in " ".join(stderr.split())
    lines_fit(stderr)
    seen = {e["event_id"]: e for e in report.data["timeline"]}
    assert seen[reboot]["seen_as"] == "Scheduled" and seen[reboot]["removed"] is not None
    assert {e["seen_as"] for e in seen.values()} == {"Scheduled", "Started", "Completed"}
    assert junit_counts(junit)["failures"] == str(len(FOLLOW_FAILS))


def test_an_underscored_role_instance_breaks_d7() -> None:
    mock = MockEndpoint(vm="FrontEnd_IN_0").start()
    try:
        mock.schedule("Reboot")
        ran = kit(mock.url, "--rate", "50", "--json")
    finally:
        mock.stop()
    report = Verdicts.of(ran.stdout)
    assert report.verdict("FAIL") == PROBE_FAILS | {"D7.resources"}
    assert report.detail("D7.resources").endswith(
        "names this VM '_FrontEnd_IN_0', not 'FrontEnd_IN_0'"
    )


def test_a_full_disk_warns_and_the_run_goes_on(mock: MockEndpoint) -> None:
    """``--record`` on a disk that fills up: every rule is still checked and reported, and
    a warning says the recording is incomplete."""
    mock.schedule("Reboot")
    ran = kit(mock.url, "--rate", "50", "--json", "--record", "/dev/full")
    assert ran.code == 1, ran.stderr  # the mock's own FAILs
    assert Verdicts.of(ran.stdout).verdict("FAIL") == PROBE_FAILS
    assert ran.stderr == "forewarn: warning: cannot write /dev/full: No space left on device\n"
