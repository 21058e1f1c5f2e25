"""``forewarn.client.urlparts`` splits a plain URL by hand (urllib.parse loads ipaddress):
what it answers, and the ValueError it raises, are ``urlsplit``'s and ``urlencode``'s for
every URL, plain or not."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forewarn.client import InvalidEndpoint, resolve_endpoint
from forewarn.client.urlparts import query, split


def _urllib(url: str) -> object:
    try:
        parts = urlsplit(url)
        return parts.scheme, parts.netloc, parts.hostname, parts.port, parts.path
    except ValueError as exc:
        return ValueError, str(exc)


def _ours(url: str) -> object:
    try:
        return split(url)
    except ValueError as exc:
        return ValueError, str(exc)


URLS = [
    "http://169.254.169.254",
    "http://169.254.169.254/",
    "HTTP://LocalHost:8080/Some/Path",
    "http://127.0.0.1:18931/metadata/scheduledevents",
    "https://imds.example:443/a;b=c/%41@x:y",
    "http://host:0",
    "http://host:065535",
    "http://host:65535",
    "http://host:65536",
    "http://host:99999",
    "http://host:123456",
    "http://host:",
    "http://host:8o",
    "http://:80",
    "http://",
    "http://[::1]:8080/x",
    "http://[fe80::1%eth0]",
    "http://[::1",
    "http://[127.0.0.1]",
    "http://user:pw@host:80/x",
    "http://host/x?api-version=1#frag",
    "http://host/x?a=1",
    "http://host/?",
    "http://host/x#f",
    "http://host/[x]",
    "http://host/x y",
    " http://host",
    "http://ho\tst",
    "http://hóst/",
    "http://h_o-s.t:1/~!$&'()*+,;=:@%",
    "h1+.-://host/x",
    "1http://host",
    "http:host",
    "//host/x",
    "http://host:²",
]


@pytest.mark.parametrize("url", URLS)
def test_urls_split_as_urlsplit_splits_them(url: str) -> None:
    assert _ours(url) == _urllib(url)


_URL_CHARS = st.sampled_from([*"aZ09.-_:/@[]%?#+~ \t!é", "http://", "HTTPS://", ":80"])


@settings(max_examples=1000)
@given(st.lists(_URL_CHARS, max_size=14).map("".join))
def test_any_url_splits_as_urlsplit_splits_it(url: str) -> None:
    assert _ours(url) == _urllib(url)


@settings(max_examples=500)
@given(
    st.from_regex(
        r"\A[A-Za-z][A-Za-z0-9+.-]{0,5}://[A-Za-z0-9._-]{1,12}(:[0-9]{1,6})?"
        r"(/[A-Za-z0-9._~!$&'()*+,;=:@%/?#\[\] é-]{0,12})?\Z"
    )
)
def test_nearly_plain_urls_split_as_urlsplit_splits_them(url: str) -> None:
    assert _ours(url) == _urllib(url)


@pytest.mark.parametrize(
    "params",
    [{}, {"api-version": "2020-07-01"}, {"a": "", "b": "x y"}, {"v": "é&=?/"}, {"k~": "_.-"}],
)
def test_queries_are_urlencodes(params: dict[str, str]) -> None:
    assert query(params) == urlencode(params)


@given(st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3))
def test_any_query_is_urlencodes(params: dict[str, str]) -> None:
    assert query(params) == urlencode(params)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("169.254.169.254", "http://169.254.169.254"),
        ("HTTP://Host:080/", "http://host:80"),
        ("http://[FE80::1]:8080/x/", "http://[fe80::1]:8080/x"),
    ],
)
def test_endpoints_resolve_as_before(url: str, expected: str) -> None:
    assert resolve_endpoint(url) == expected


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://host:65536", "Port out of range"),
        ("http://host:8o", "Port could not be cast"),
        ("http://[::1", "Invalid IPv6 URL"),
        ("ftp://host", "must be an http:// URL"),
    ],
)
def test_bad_endpoints_say_what_urlsplit_says(url: str, fragment: str) -> None:
    with pytest.raises(InvalidEndpoint, match=fragment):
        resolve_endpoint(url)
