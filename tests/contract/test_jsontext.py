"""``forewarn.contract.jsontext`` (the standard library's json, which the VM commands load
anyway) reads and writes JSON exactly as msgspec does: every input below, hand-picked and
generated, is given to both decoders, and both must accept it with equal values or both
refuse it."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forewarn.contract.jsontext import JSONFormatError, dumps, loads

_REFUSED = object()


def _msgspec(body: bytes | str) -> Any:
    """msgspec's answer; every way it refuses (a UnicodeError or RecursionError too) is one."""
    try:
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeError, RecursionError):
        return _REFUSED


def _ours(body: bytes | str) -> Any:
    try:
        return loads(body)
    except JSONFormatError:
        return _REFUSED


def _typed(value: Any) -> Any:
    """``value`` with each number's type beside it (1 == 1.0 == True in Python), -0.0 told
    from 0.0 and dict keys in order, so that equal means identical."""
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def assert_same(body: bytes | str) -> Any:
    theirs, ours = _msgspec(body), _ours(body)
    if theirs is _REFUSED or ours is _REFUSED:
        assert (theirs is _REFUSED, ours is _REFUSED) == (True, True), (body, theirs, ours)
        return _REFUSED
    assert _typed(ours) == _typed(theirs), body
    return ours


_DEEP = 100_000

ACCEPTED = [
    b'{"a":1,"b":[true,false,null],"c":{"d":"e"}}',
    b' \t\r\n{"a" : 1 } \n',
    b'{"a":1,"a":2}',  # a duplicate key keeps the last value
    b'{"a":1,"b":2,"a":3}',
    b"-0",
    b"-0.0",
    b"0.1e1",
    b"1E+5",
    b"1e-99999",  # underflow is zero, not an error
    b"4.9e-324",
    b"1.7976931348623157e308",
    b"18446744073709551616",  # past 64 bits: still an int
    b"9" * 4300,  # as many digits as int() reads
    b"-" + b"9" * 4299,  # msgspec counts the sign: 4,300 characters
    b"1" + b"0" * 308 + b".0",
    b'"\\ud83d\\ude00"',  # an escaped surrogate pair is one character
    b'"\\u0000\\u001f\\/\\b\\f\\n\\r\\t"',
    b'"\x7f\xe2\x80\xa8\xef\xbf\xbf"',  # DEL, U+2028, U+FFFF: not control characters
    b'"\xf0\x9f\x98\x80"',
    b"[" * 200 + b"]" * 200,
    '{"é": "ü"}',
    "[1]",
]

REFUSED = [
    b"",
    b" ",
    b"NaN",
    b"[Infinity]",
    b"[-Infinity]",
    b"1e400",
    b"-1e400",
    b"1.7976931348623159e308",
    b"1" + b"0" * 309 + b".0",
    b"1" * 4301,  # more digits than int() reads
    b"-" + b"9" * 4300,  # 4,301 characters
    b"[" + b"9" * 4301 + b"]",
    b"1" * 4300 + b".5",
    b"01",
    b"1.",
    b".5",
    b"+1",
    b"1e",
    b"-",
    b"tru",
    b"{'a':1}",
    b'{"a":1,}',
    b"[1,]",
    b"{}x",
    b'"\x01"',
    b'"\t"',
    b'"\\x41"',
    b'"\\ud800"',  # lone surrogates, escaped
    b'"\\udc00"',
    b'"\\udc00\\ud800"',
    b'"\\ud800\\u0041"',
    b'{"\\ud800":1}',
    b'[["\\udfff"]]',
    b"\xef\xbb\xbf{}",  # a BOM
    b"\xff",
    b'"\xff"',  # not UTF-8, in a string and out
    b'"\xed\xa0\x80"',  # a surrogate, encoded
    b'"\xc0\x80"',  # overlong
    b'"\xf4\x90\x80\x80"',  # past U+10FFFF
    "{}".encode("utf-16"),
    "{}".encode("utf-32"),
    b"\x00",
    b"\x0c{}",
    b"[" * _DEEP + b"]" * _DEEP,
    b'{"a":' * _DEEP + b"1" + b"}" * _DEEP,
    '"\ud800"',  # text with a lone surrogate
]


@pytest.mark.parametrize("body", ACCEPTED, ids=range(len(ACCEPTED)))
def test_both_accept_with_equal_values(body: bytes | str) -> None:
    assert assert_same(body) is not _REFUSED


@pytest.mark.parametrize("body", REFUSED, ids=range(len(REFUSED)))
def test_both_refuse(body: bytes | str) -> None:
    assert assert_same(body) is _REFUSED


@pytest.mark.parametrize("limit", [640, 0, 10_000])
def test_integers_read_alike_whatever_digits_int_may_read(limit: int) -> None:
    """msgspec reads no integer past 4,300 characters, nor one ``int`` may not read."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        for digits in (639, 640, 641, 4299, 4300, 4301, 5000):
            for sign in (b"", b"-"):
                assert_same(sign + b"7" * digits)
                assert_same(b"[" + sign + b"7" * digits + b"]")
    finally:
        sys.set_int_max_str_digits(before)


def test_a_refusal_is_a_value_error_that_says_why() -> None:
    assert issubclass(JSONFormatError, ValueError)
    for body, why in [
        (b"{", "Expecting"),
        (b"NaN", "NaN"),
        (b"1e400", "out of range"),
        (b'"\xff"', "UTF-8"),
        (b'"\\ud800"', "surrogate"),
        (b"[" * _DEEP, "deeply"),
    ]:
        with pytest.raises(JSONFormatError, match=why):
            loads(body)


def test_buffers_are_read_as_bytes() -> None:
    assert loads(bytearray(b'{"a":[1]}')) == loads(memoryview(b'{"a":[1]}')) == {"a": [1]}


_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@settings(max_examples=300)
@given(_values)
def test_any_json_value_reads_alike(value: Any) -> None:
    body = json.dumps(value, ensure_ascii=False).encode()
    assert assert_same(body) is not _REFUSED
    assert assert_same(json.dumps(value).encode()) is not _REFUSED  # ASCII, \u escapes


@settings(max_examples=300)
@given(_values, st.data())
def test_damaged_json_reads_alike(value: Any, data: st.DataObject) -> None:
    """Bytes cut out, put in or changed anywhere: both refuse, or both read the same."""
    body = bytearray(json.dumps(value, ensure_ascii=data.draw(st.booleans())).encode())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(body)))
        kind = data.draw(st.sampled_from(["cut", "insert", "change"]))
        piece = data.draw(
            st.sampled_from([b",", b"]", b"}", b'"', b"\\", b"\\u", b"d8", b"dc", b"\x00",
                             b"\xff", b"\xed", b"\xc3", b"e999", b"-", b".", b"0", b" ", b"NaN"])
        )  # fmt: skip
        if kind == "cut":
            del body[at : at + data.draw(st.integers(1, 4))]
        elif kind == "insert":
            body[at:at] = piece
        else:
            body[at : at + len(piece)] = piece
    assert_same(bytes(body))


@settings(max_examples=300)
@given(st.binary(max_size=40))
def test_any_bytes_read_alike(body: bytes) -> None:
    assert_same(body)


@settings(max_examples=200)
@given(st.from_regex(rb"\A-?(0|[1-9][0-9]{0,400})(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,4})?\Z"))
def test_numbers_read_alike(body: bytes) -> None:
    assert_same(body)


@settings(max_examples=200)
@given(st.lists(st.sampled_from(["\\ud83d", "\\ude00", "\\udbff", "\\udc00", "\\u0041", "a",
                                 "\\\\", "\\\\ud800", "é"]), max_size=6))  # fmt: skip
def test_escapes_of_surrogates_read_alike(pieces: list[str]) -> None:
    assert_same(('"' + "".join(pieces) + '"').encode())
    assert_same(('{"' + "".join(pieces) + '":1}').encode())


def _start_requests(text: str) -> dict[str, Any]:
    return {"StartRequests": [{"EventId": text}, {"EventId": "A"}]}


def test_dumps_writes_msgspec_bytes_for_every_character() -> None:
    """Every code point, in strings as keys and values; surrogates refused by both."""
    for start in range(0, 0x110000, 0x1000):
        text = "".join(chr(c) for c in range(start, start + 0x1000) if not 0xD800 <= c < 0xE000)
        assert dumps(_start_requests(text)) == msgspec.json.encode(_start_requests(text))
        assert dumps({text: [text]}) == msgspec.json.encode({text: [text]})
    for surrogate in ("\ud800", "\udfff", "a\udc80b"):
        with pytest.raises(UnicodeEncodeError):
            msgspec.json.encode(_start_requests(surrogate))
        with pytest.raises(UnicodeEncodeError):
            dumps(_start_requests(surrogate))


_no_floats = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@settings(max_examples=300)
@given(_no_floats)
def test_dumps_writes_msgspec_bytes(value: Any) -> None:
    assert dumps(value) == msgspec.json.encode(value)


def test_dumps_refuses_what_is_not_json() -> None:
    with pytest.raises(ValueError):
        dumps([math.nan])
