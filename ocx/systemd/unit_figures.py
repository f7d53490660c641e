"""What each running unit has spent: its state and start from systemd, its
CPU time, memory and processes from its cgroup (the console's bars, D17).

    figures = read_units(["ocx-0123456789ab-*.service"])

One ListUnitsByPatterns for the states, two properties per live unit asked
at once (sd_bus.py), then a few small files per cgroup (cgroup.py). Raises
sd_bus.BusUnreadable when systemd cannot be asked.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from . import cgroup
from .sd_bus import SERVICE, UNIT, SystemBus

LIVE = ("active", "activating", "deactivating", "reloading")  # states with a cgroup


@dataclass(frozen=True)
class UnitFigures:
    name: str
    description: str
    active_state: str
    sub_state: str
    active_since: float | None = None  # Unix seconds it became active (RuntimeMaxSec counts from there)
    cpu_seconds: float | None = None  # every process it ran, so far (D17 cpu)
    usage: cgroup.Usage = cgroup.Usage()

    @property
    def live(self) -> bool:
        return self.active_state in LIVE


def read_units(patterns: Iterable[str], cgroup_root: str = cgroup.ROOT) -> list[UnitFigures]:
    with SystemBus() as bus:
        listed = bus.units(patterns)
        live = [unit for unit in listed if unit.active_state in LIVE]
        asked = [(unit.name, UNIT, "ActiveEnterTimestamp", b"t") for unit in live]
        asked += [(unit.name, SERVICE, "ControlGroup", b"s") for unit in live]
        values = bus.properties(asked)
    since = dict(zip((u.name for u in live), values[: len(live)], strict=True))
    groups = dict(zip((u.name for u in live), values[len(live):], strict=True))
    figures = []
    for unit in listed:
        entered, group = since.get(unit.name), groups.get(unit.name)
        cpu = cgroup.cpu_usage_usec(str(group), cgroup_root) if group else None
        figures.append(UnitFigures(
            unit.name, unit.description, unit.active_state, unit.sub_state,
            active_since=entered / 1_000_000 if isinstance(entered, int) and entered > 0 else None,
            cpu_seconds=cpu / 1_000_000 if cpu is not None else None,
            usage=cgroup.usage(str(group), cgroup_root) if group else cgroup.Usage()))
    return figures
