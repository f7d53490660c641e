"""The budget grammar of C2 with the units of D10.

Pure functions from the JSON values a record carries to whole numbers
systemd can enforce (D17). Each raises FieldError naming the field.
"""
from __future__ import annotations

import re

from .errors import FieldError

_WALL = re.compile(r"([0-9]+)([smhd])", re.ASCII)  # fullmatch: the whole value (hashes.py); 0-9 only
_MEMORY = re.compile(r"([0-9]+)([KMG]?)", re.ASCII)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_BYTES = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}  # D10: powers of 1024
# What a form offers after a number (docs/console.md, 'The tools'): each suffix the grammar takes, named,
# the likeliest first.
WALL_UNITS = {"m": "minutes", "h": "hours", "d": "days", "s": "seconds"}
MEMORY_UNITS = {"M": "MiB", "G": "GiB", "K": "KiB", "": "bytes"}
# systemd keeps times in microseconds and sizes in bytes as uint64; anything
# past these cannot be enforced as written, so it is refused, not clamped.
MAX_SECONDS = (2**64 - 1) // 1_000_000 - 1
MAX_BYTES = 2**63
MAX_PROCESSES = 2**32


def _whole_number(field: str, value: object, what: str) -> int:
    # bool is an int in Python; `true` is not a number in a record.
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(field, f"{_show(value)} is not a whole number of {what}")
    return value


def _digits(text: str) -> int:
    """A run of 0-9 as its number; past 30 digits, one past every limit (int() of 4,301 raises)."""
    return int(text) if len(text) <= 30 else 10**30


def _positive(field: str, number: int, limit: int, shown: object) -> int:
    if number <= 0:
        raise FieldError(field, f"{_show(shown)} is not more than zero")  # D10
    if number > limit:
        raise FieldError(field, f"{_show(shown)} is larger than a node can enforce")
    return number


def _show(value: object) -> str:
    import json

    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def parse_wall(value: object, field: str = "budget.wall") -> int:
    """`"90s"`, `"15m"`, `"2h"`, `"1d"` → seconds."""
    match = _WALL.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise FieldError(
            field, f"{_show(value)} is not a whole number followed by s, m, h or d"
        )
    seconds = _digits(match.group(1)) * _SECONDS[match.group(2)]
    return _positive(field, seconds, MAX_SECONDS, value)


def parse_cpu(value: object, field: str = "budget.cpu") -> int:
    """Whole seconds of CPU time, all processes together (D10)."""
    return _positive(field, _whole_number(field, value, "seconds"), MAX_SECONDS, value)


def parse_memory(value: object, field: str = "budget.memory") -> int:
    """Bytes, as a number or as a whole number followed by K, M or G."""
    if isinstance(value, str):
        match = _MEMORY.fullmatch(value)
        if match is None:
            raise FieldError(
                field, f"{_show(value)} is not a number of bytes, or a whole number followed by K, M or G"
            )
        number = _digits(match.group(1)) * _BYTES[match.group(2)]
    else:
        number = _whole_number(field, value, "bytes")
    return _positive(field, number, MAX_BYTES, value)


def parse_processes(value: object, field: str = "budget.processes") -> int:
    """The most processes at once (TasksMax)."""
    number = _whole_number(field, value, "processes")
    return _positive(field, number, MAX_PROCESSES, value)


def format_seconds(seconds: int) -> str:
    """The shortest exact wall notation, for notes: 7200 → "2h"."""
    for suffix in ("d", "h", "m"):
        if seconds % _SECONDS[suffix] == 0:
            return f"{seconds // _SECONDS[suffix]}{suffix}"
    return f"{seconds}s"
