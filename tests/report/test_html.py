"""The HTML report: one self-contained page, its pictures drawn from the verdict.

Rendered from the sample rehearsal the docs link to (``docs/sample_report.py``: the
demo fleet, polling and approving through the real endpoint on the virtual clock), so
the page checked here is the one published.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

SAMPLE = Path(__file__).resolve().parents[2] / "docs" / "sample_report.py"
SVG = "{http://www.w3.org/2000/svg}"


def _sample() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sample_report", SAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def page() -> str:
    html: str = asyncio.run(_sample().rehearse())
    return html


def _svgs(page: str, css_class: str) -> list[ET.Element]:
    found = re.findall(rf'<svg class="{css_class}".*?</svg>', page, flags=re.S)
    return [ET.fromstring(s.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1)) for s in found]


def test_every_event_has_a_timeline_and_a_verdict(page: str) -> None:
    sections = re.findall(r'<section class="event" id="event-([^"]+)" data-verdict="(\w+)">', page)
    verdicts = [v for _, v in sections]
    assert verdicts.count("fail") == 2 and verdicts.count("info") == 1
    assert len(sections) == 11
    operations = re.findall(r'<tr class="op filterable" id="op-([^"]+)"', page)
    assert len(_svgs(page, "timeline")) == len(operations) == 6  # one per operation
    assert "no script" not in page and "<script" not in page  # no JavaScript at all


def test_a_missed_vm_is_drawn_and_explained(page: str) -> None:
    timelines = _svgs(page, "timeline")
    missed = [t for t in timelines if t.find(f".//{SVG}path[@class='m-missed']") is not None]
    labels = {
        text.text for t in missed for text in t.iter(f"{SVG}text")
        if "lane-missed" in (text.get("class") or "")
    }  # fmt: skip
    assert labels == {"FrontEnd_IN_1", "workers_3"}
    assert "polls with api-version 2017-08-01, which does not show Preempt" in page
    assert re.search(r"did not poll during the notice \(last poll \d+ s before it\)", page)


def test_approvals_and_sightings_are_marked_on_their_lanes(page: str) -> None:
    first = next(  # web-0's user reboot: seen, approved, started
        t for t in _svgs(page, "timeline")
        if [x.text for x in t.iter(f"{SVG}text") if "lane-label" in (x.get("class") or "")]
        == ["event", "web-0"]
    )  # fmt: skip
    kinds = [e.get("class") for e in first.iter() if (e.get("class") or "").startswith("m-")]
    assert kinds.count("m-seen") == 1 and kinds.count("m-approved") == 2  # its lane + event's
    rules = {e.get("class") for e in first.iter(f"{SVG}line")}
    assert {"rule-created", "rule-not-before", "rule-started", "rule-removed"} <= rules


def test_histograms_count_every_latency(page: str) -> None:
    detection, approval = _svgs(page, "histogram")
    counts = [int(t.text or 0) for t in detection.iter(f"{SVG}text") if (t.text or "").isdigit()]
    stated = re.search(r"first sighting: (\d+) values", page)
    assert stated is not None and sum(counts) == int(stated.group(1)) > 5
    assert detection.find(f".//{SVG}line[@class='median']") is not None
    assert approval.find(f".//{SVG}rect[@class='bar']") is not None


def test_the_unlisted_approval_and_the_silent_vm_are_listed(page: str) -> None:
    assert re.search(r"<td>web-5</td>", page)
    assert "approved by unlisted VMs: web-5" in page
    silent = re.search(r"VMs not polling</h2>(.*?)<table>(.*?)</table>", page, re.S)
    assert silent is not None and "FrontEnd_IN_1" in silent.group(2)
    assert "jumpbox" not in silent.group(2)  # it never polled: not "stopped"
    assert re.search(r"Never polled \(\d+\):</strong> [^<]*jumpbox", silent.group(1))
