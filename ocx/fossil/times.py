"""Fossil's two ways of writing a time, as UTC datetimes."""
from __future__ import annotations

from datetime import UTC, datetime

_UNIX_EPOCH_JULIAN_DAY = 2440587.5


def julian_to_datetime(day: float) -> datetime:
    """Fossil's Julian day numbers (rcvfrom, event, tagxref...) as UTC."""
    return datetime.fromtimestamp((day - _UNIX_EPOCH_JULIAN_DAY) * 86400.0, tz=UTC)


def card_date(text: str | None) -> datetime | None:
    """A D card (`2026-12-02T14:03:00.123`, UTC) as a datetime."""
    if not text:
        return None
    return datetime.fromisoformat(text).replace(tzinfo=UTC)
