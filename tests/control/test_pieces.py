"""The verdict encoded in pieces is the verdict encoded at once, byte for byte."""

from __future__ import annotations

import msgspec
import pytest

from forewarn.control.pieces import encode_in_pieces


class Row(msgspec.Struct, kw_only=True):
    vm: str
    at: float | None = None
    lines: list[str] = []


class Verdict(msgspec.Struct, kw_only=True, rename="camel"):
    generated_at: float
    rows: list[Row]
    names: list[str]
    totals: dict[str, int]
    empty: list[Row] = []


class Sparse(msgspec.Struct, omit_defaults=True):
    rows: list[Row]
    note: str = ""


def _verdict(count: int) -> Verdict:
    rows = [Row(vm=f"vm-{i}", at=i / 3 if i % 2 else None, lines=["é", '"q"'] * (i % 3))
            for i in range(count)]  # fmt: skip
    return Verdict(generated_at=1.5, rows=rows, names=[r.vm for r in rows], totals={"ok": count})


@pytest.mark.parametrize("count", [0, 1, 7, 8, 9, 1000])
@pytest.mark.parametrize("slice_size", [1, 8, 200])
def test_pieces_are_the_same_bytes(count: int, slice_size: int) -> None:
    verdict = _verdict(count)
    assert encode_in_pieces(verdict, slice_size=slice_size) == msgspec.json.encode(verdict)


def test_a_struct_that_leaves_fields_out_is_encoded_at_once() -> None:
    sparse = Sparse(rows=_verdict(20).rows)
    assert encode_in_pieces(sparse, slice_size=3) == msgspec.json.encode(sparse)
