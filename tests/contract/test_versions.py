"""The api-version table: which names exist and what each one renders."""

from __future__ import annotations

import pytest

from forewarn.contract import NEWEST_VERSIONS, SUPPORTED_VERSIONS, EventType, lookup_version
from tests.contract.helpers import api, has_key, supports
from tests.support.wire import VERSIONS


def test_supported_versions_are_exactly_the_seven_oldest_first() -> None:
    assert SUPPORTED_VERSIONS == VERSIONS


def test_newest_versions_are_the_three_newest_newest_first() -> None:
    assert NEWEST_VERSIONS == ("2020-07-01", "2019-08-01", "2019-04-01")


@pytest.mark.parametrize("version", VERSIONS)
def test_lookup_finds_each_supported_version_by_exact_name(version: str) -> None:
    found = lookup_version(version)
    assert found is not None
    assert found.name == version


@pytest.mark.parametrize(
    "name",
    [
        "latest",
        "2016-xx",
        "2016-01-01",
        "2020-07-02",
        "2021-01-01",
        "",
        " 2020-07-01",
        "2020-07-01 ",
        "2020-7-1",
        "20200701",
    ],
)
def test_lookup_returns_none_for_unknown_names(name: str) -> None:
    assert lookup_version(name) is None


@pytest.mark.parametrize("version", VERSIONS)
def test_event_types_per_version(version: str) -> None:
    expected = {t for t in EventType if supports(version, t)}
    assert set(api(version).event_types) == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_field_flags_per_version(version: str) -> None:
    v = api(version)
    assert v.has_description is has_key(version, "Description")
    assert v.has_event_source is has_key(version, "EventSource")
    assert v.has_duration is has_key(version, "DurationInSeconds")


@pytest.mark.parametrize("version", VERSIONS)
def test_only_2017_03_01_underscores_names_and_skips_the_post_header(version: str) -> None:
    first = version == "2017-03-01"
    assert api(version).underscore_iaas_names is first
    assert api(version).post_needs_metadata_header is not first
