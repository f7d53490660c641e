"""Fossil's delta format, applied in pure Python (fossil-scm.org's
delta_format page; written from the format, not from Fossil's code).

A delta is: the output size as a base-64 integer and a newline, then
commands, each an integer followed by one character:
`N@O,` copies N bytes of the source from offset O, `N:` inserts the next N
bytes of the delta, and `N;` ends it, N being a checksum of the output.
"""
from __future__ import annotations

import struct

from .errors import FossilLayerError

_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"
_VALUE = {ord(c): i for i, c in enumerate(_DIGITS)}


class DeltaError(FossilLayerError, ValueError):
    """A delta that is malformed or does not fit its source."""


def _read_integer(delta: bytes, pos: int) -> tuple[int, int]:
    start, value = pos, 0
    while pos < len(delta) and delta[pos] in _VALUE:
        value = (value << 6) + _VALUE[delta[pos]]
        pos += 1
    if pos == start:
        raise DeltaError(f"expected an integer at byte {start}")
    return value, pos


def checksum(data: bytes) -> int:
    """The 32-bit sum of the output read as big-endian words, the last one
    padded with zero bytes: what a delta's `;` command carries."""
    padded = data + b"\0" * (-len(data) % 4)
    words: tuple[int, ...] = struct.unpack(f">{len(padded) // 4}I", padded)
    return sum(words) & 0xFFFFFFFF


def apply_delta(source: bytes, delta: bytes, limit: int | None = None) -> bytes:
    """The target that DELTA makes from SOURCE; DeltaError if it cannot, or if
    it states a target larger than LIMIT (nothing is built then)."""
    size, pos = _read_integer(delta, 0)
    if limit is not None and size > limit:
        raise DeltaError(f"the delta states {size} bytes, past the bound of {limit}")
    if delta[pos : pos + 1] != b"\n":
        raise DeltaError("size not followed by a newline")
    pos += 1
    out = bytearray()
    while pos < len(delta):
        count, pos = _read_integer(delta, pos)
        command = delta[pos : pos + 1]
        pos += 1
        if command == b"@":
            offset, pos = _read_integer(delta, pos)
            if delta[pos : pos + 1] != b",":
                raise DeltaError(f"copy command not ended by ',' at byte {pos}")
            pos += 1
            if offset + count > len(source):
                raise DeltaError("copy reaches past the end of the source")
            out += source[offset : offset + count]
        elif command == b":":
            if pos + count > len(delta):
                raise DeltaError("insert reaches past the end of the delta")
            out += delta[pos : pos + count]
            pos += count
        elif command == b";":
            if len(out) != size:
                raise DeltaError(f"output is {len(out)} bytes, the delta says {size}")
            if checksum(bytes(out)) != count:
                raise DeltaError("checksum of the output does not match")
            return bytes(out)
        else:
            raise DeltaError(f"unknown delta command {command!r}")
        if len(out) > size:
            raise DeltaError("output longer than the delta says")
    raise DeltaError("delta has no terminating ';'")
