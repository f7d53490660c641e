"""Numbers written in text, read as ASCII only.

Python's `int`, `float`, `str.isdigit`, `\\d` and `strptime` take the digits
of every script (Arabic-Indic `٣`, fullwidth `３`, superscript `³`, the last
one passing isdigit and failing int): a value that Fossil, systemd or
another reader takes for no number at all would be one for OCX. Whatever
text OCX reads a number from, where a run, a repository or a request may
have written it, is read here. Pure.
"""
from __future__ import annotations

import math
import re

_WHOLE = re.compile(r"-?[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)
DIGITS_AT_MOST = 30  # far beyond any count or size OCX reads; int() of a longer text costs and may raise


def is_digits(text: str) -> bool:
    """TEXT is one or more of 0-9, nothing else (not str.isdigit: `٣`, `³`)."""
    return text.isascii() and text.isdigit()


def whole_number(text: str) -> int:
    """TEXT as a whole number: an optional `-`, then 0-9 only; ValueError otherwise."""
    if len(text) > DIGITS_AT_MOST or not _WHOLE.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a whole number written in 0-9")
    return int(text)


def decimal_number(text: str) -> float:
    """TEXT as a number: 0-9, an optional `-` and fraction, no exponent, no
    nan or inf (float() takes all of them); ValueError otherwise."""
    if len(text) > DIGITS_AT_MOST or not _DECIMAL.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a number written in 0-9")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]!r} is not a finite number")
    return value
