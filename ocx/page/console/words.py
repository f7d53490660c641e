"""Numbers and times as people read them, and every string escaped (docs/console.md, 'Safe').

Everything the console draws from a repository, a unit or a form goes
through `esc` (text and attribute values alike): a hostile objective,
note, branch name or login is shown, never run.
"""
from __future__ import annotations

import html
import time
from datetime import datetime

from ...protocol.terminal import terminal_safe


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def plain(text: str) -> str:
    """What a program printed, without its terminal's escape sequences (its
    colours), every other control shown as its escape: the command line's one
    rendering (protocol/terminal.py), keeping lines and tabs."""
    return terminal_safe(text, keep="\n\t", drop_sequences=True)


def short(hash_: str) -> str:
    return hash_[:12]


def duration(seconds: float | None) -> str:
    """`42 s`, `3 min 20 s`, `2 h 5 min`, `3 d 4 h`."""
    if seconds is None:
        return "?"
    whole = max(0, int(seconds))
    for size, unit, smaller, small_unit in ((86400, "d", 3600, "h"), (3600, "h", 60, "min"), (60, "min", 1, "s")):
        if whole >= size:
            rest = (whole % size) // smaller
            return f"{whole // size} {unit}" + (f" {rest} {small_unit}" if rest else "")
    return f"{whole} s"


def ago(when: datetime | None, now: float | None = None) -> str:
    if when is None:
        return "?"
    return duration((now or time.time()) - when.timestamp()) + " ago"


def stamp(when: datetime | None) -> str:
    """The full time, for a title: UTC as Fossil shows it."""
    return when.strftime("%Y-%m-%d %H:%M:%S UTC") if when else ""


def size(number: int | None) -> str:
    """Bytes in powers of 1024, as D10 counts them."""
    if number is None:
        return "?"
    value = float(number)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" or value >= 100 else f"{value:.1f} {unit}"
        value /= 1024
    return f"{number} B"


def excerpt(text: str, limit: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
