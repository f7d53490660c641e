"""Fossil's delta format, pure (ocx/fossil/delta.py)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocx.fossil.delta import DeltaError, apply_delta, checksum

_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"


def b64(n: int) -> bytes:
    out = ""
    while True:
        out = _DIGITS[n & 63] + out
        n >>= 6
        if n == 0:
            return out.encode()


def encode(source: bytes, pieces: list[tuple[str, int, int]], target: bytes) -> bytes:
    """A delta made of PIECES: ("copy", offset, count) or ("insert", start, count)
    of TARGET, as the format page describes (test-side encoder)."""
    out = b64(len(target)) + b"\n"
    for kind, start, count in pieces:
        if kind == "copy":
            out += b64(count) + b"@" + b64(start) + b","
        else:
            out += b64(count) + b":" + target[start : start + count]
    return out + b64(checksum(target)) + b";"


def test_copy_and_insert() -> None:
    source = b"hello, world\n"
    target = b"hello, fossil world\n"
    delta = encode(source, [("copy", 0, 7), ("insert", 7, 7), ("copy", 7, 6)], target)
    assert apply_delta(source, delta) == target


def test_checksum_is_big_endian_word_sum() -> None:
    assert checksum(b"") == 0
    assert checksum(b"\x00\x00\x00\x01") == 1
    assert checksum(b"\x01") == 0x01000000  # padded with zeros
    assert checksum(b"\xff\xff\xff\xff\x00\x00\x00\x02") == 1  # wraps at 32 bits


@pytest.mark.parametrize(
    "delta, why",
    [
        (b"3\n3@0,0;", "checksum"),  # good copy, bad checksum
        (b"3\n4@0,", "past the end"),
        (b"3\n3@0,", "terminating"),
        (b"3\n3:ab", "past the end of the delta"),
        (b"3\n3?0,0;", "unknown"),
        (b"3 3@0,0;", "newline"),
        (b"2\n3@0,0;", "longer"),
    ],
)
def test_bad_deltas_are_refused(delta: bytes, why: str) -> None:
    with pytest.raises(DeltaError, match=why):
        apply_delta(b"abc", delta)


@st.composite
def source_pieces_target(draw):
    source = draw(st.binary(min_size=1, max_size=300))
    pieces, target = [], b""
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            start = draw(st.integers(0, len(source) - 1))
            count = draw(st.integers(1, len(source) - start))
            pieces.append(("copy", start, count))
            target += source[start : start + count]
        else:
            text = draw(st.binary(min_size=1, max_size=40))
            pieces.append(("insert", len(target), len(text)))
            target += text
    return source, pieces, target


@given(source_pieces_target())
def test_any_well_formed_delta_rebuilds_its_target(case) -> None:
    source, pieces, target = case
    assert apply_delta(source, encode(source, pieces, target)) == target
