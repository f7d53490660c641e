"""A transient timer described plainly, without D-Bus (like units.py).

A timer wakes its service once, ON_ACTIVE_SEC after the timer started; the
service is made with it (StartTransientUnit's auxiliary unit) and nothing
runs until then. `stop_propagated_from` ties the timer to another unit:
when that unit stops, however it stops (its program's own end included),
systemd stops the timer, so nothing is left waiting for a run that is gone.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import Property, UnitError
from .units import USEC

_NAME = re.compile(r"[A-Za-z0-9:_.\\-]+\.timer")  # whole names only: fullmatch


@dataclass(frozen=True)
class TransientTimer:
    name: str                                   # X.timer; it starts X.service
    on_active_sec: float
    description: str = ""
    accuracy_sec: float = 1.0                   # systemd's default, a minute, would be late by that much
    remain_after_elapse: bool = False           # gone once it fired: the name is free again
    stop_propagated_from: Sequence[str] = ()

    @property
    def service(self) -> str:
        return self.name.removesuffix(".timer") + ".service"


def properties(t: TransientTimer) -> list[Property]:
    if not _NAME.fullmatch(t.name):
        raise UnitError(f"name: {t.name!r} is not a valid timer unit name")
    if not t.on_active_sec > 0:
        raise UnitError(f"on_active_sec: {t.on_active_sec!r} is not positive")
    if not t.accuracy_sec > 0:
        raise UnitError(f"accuracy_sec: {t.accuracy_sec!r} is not positive")
    props: list[Property] = [
        ("Description", "s", t.description or t.name),
        ("OnActiveSec", "t", int(round(t.on_active_sec * USEC))),
        ("AccuracyUSec", "t", int(round(t.accuracy_sec * USEC))),
        ("RemainAfterElapse", "b", t.remain_after_elapse),
    ]
    if t.stop_propagated_from:
        for unit in t.stop_propagated_from:
            if "." not in unit:
                raise UnitError(f"stop_propagated_from: {unit!r} is not a unit name")
        props.append(("StopPropagatedFrom", "as", list(t.stop_propagated_from)))
    return props
