"""The pytest plugin as users meet it: their test files, run by a child pytest that loads
the plugin through its ``pytest11`` entry point; the docs' example (docs/how-to/
pytest-plugin.md, and the same on docs/paths/test-in-ci.md) runs as written."""

from __future__ import annotations

import pytest

from tests.support.docpages import block_after, page

PAGE = "how-to/pytest-plugin.md"
PATH_PAGE = "paths/test-in-ci.md"
MARK = "<!-- example: run by tests/testing/test_plugin.py -->"
#: The how-to saves the example as a file its page then runs with pytest.
SAVED = "<!-- example: file test_reboot.py -->"


def readme_example() -> str:
    """The test file the plugin's how-to page saves (and runs with pytest, as the page
    runner does)."""
    return block_after(page(PAGE), SAVED, "python")


def doc_examples() -> list[str]:
    """The docs' blocks these tests run: the how-to page's file, and the same on the
    path's page."""
    return [readme_example(), block_after(page(PATH_PAGE), MARK, "python")]


def test_the_readme_example_passes(pytester: pytest.Pytester) -> None:
    example, on_the_path = doc_examples()
    assert on_the_path == example  # the path's page shows the example run here
    assert 8 <= len(example.strip().splitlines()) <= 14  # a short example, as promised
    pytester.makepyfile(test_readme=example)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_readme_example_can_fail(pytester: pytest.Pytester) -> None:
    """The example's assertions bite: with a wrong expectation it fails."""
    broken = readme_example().replace("EventType.REBOOT", "EventType.FREEZE")
    pytester.makepyfile(test_readme=broken)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)


USERS_TESTS = '''
import json
import urllib.request

import pytest

FLEET = """
scopes:
  - {kind: availability_set, name: web, vms: 2, update_domains: 2}
  - {kind: scale_set, name: spot, vms: 1, spot: true}
"""


def my_code(base_url):
    """A user's handler: plain urllib, knows nothing of forewarn."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(
        base_url + "/metadata/scheduledevents?api-version=2020-07-01",
        headers={"Metadata": "true"},
    )
    return [e["EventType"] for e in json.load(opener.open(request))["Events"]]


@pytest.fixture
def forewarn_fleet():
    return FLEET


def test_default_vm_of_the_fixture_fleet(forewarn, forewarn_vm, forewarn_url):
    assert forewarn_vm == "web-0"
    assert forewarn.vms == ("web-0", "web-1", "spot_0")
    forewarn.trigger("spot-eviction", "spot_0")
    assert my_code(forewarn_url) == []
    assert my_code(forewarn.url("spot_0")) == ["Preempt"]


@pytest.mark.forewarn(vm="web-1")
def test_marker_picks_the_vm(forewarn_vm, forewarn_client, forewarn):
    assert forewarn_vm == "web-1"
    assert forewarn_client.instance().compute_name == "web-1"


@pytest.mark.forewarn(fleet={"scopes": [{"kind": "standalone", "name": "solo"}]})
def test_marker_fleet_wins(forewarn, forewarn_vm):
    assert (forewarn.vms, forewarn_vm) == (("solo",), "solo")


@pytest.mark.forewarn(enablement="on-first-request")
def test_marker_settings(forewarn, forewarn_url):
    assert forewarn.trigger("user-reboot", "web-1")["unnotified"] == ["web-1"]
    my_code(forewarn_url)  # a request from the scope switches its events on
    op = forewarn.trigger("user-reboot", "web-0")
    assert op["unnotified"] == [] and len(op["event_ids"]) == 1


async def test_async_client(forewarn):
    forewarn.trigger("user-reboot", "web-0")
    async with forewarn.async_client("web-1") as client:
        (event,) = (await client.get()).events
    assert event.resources == ("web-0",)
'''


def test_fixtures_marker_and_fleet_override(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_users=USERS_TESTS)
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)


def test_marker_mistakes_are_reported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.forewarn(colour="blue")
def test_bad_option(forewarn):
    pass

@pytest.mark.forewarn(vm="nobody")
def test_unknown_vm(forewarn_url):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*unknown option colour*", "*no VM 'nobody'*"])
