"""Installing and starting a node's own (non-transient) units over D-Bus.

What `systemctl daemon-reload`, `enable` and `start` would do, as Manager
calls, so `ocx node init` runs no systemctl (architecture: D-Bus only in
ocx/systemd). Jobs are waited for by watching the unit's ActiveState: a
start that fails says which state and result it ended in.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .units import SERVICE_IFACE, UNIT_IFACE

if TYPE_CHECKING:                      # bus imports dbus-next: keep it lazy
    from .bus import Bus

SETTLED = ("active", "failed", "inactive")


@dataclass(frozen=True)
class Enabled:
    changes: tuple[tuple[str, str, str], ...]  # (type, file, destination) as systemd reports them


async def reload(bus: Bus) -> None:
    """daemon-reload: systemd replies once the unit files are read again."""
    await bus.call("Reload")


async def enable(bus: Bus, names: list[str]) -> Enabled:
    """EnableUnitFiles (not runtime, force): the [Install] symlinks; an
    instance of a template is linked to the template. Already enabled: no changes."""
    _carries, changes = await bus.call("EnableUnitFiles", "asbb", [list(names), False, True])
    return Enabled(tuple(tuple(change) for change in changes))


async def unit_file_state(bus: Bus, name: str) -> str:
    """'enabled', 'disabled', 'static', … as `systemctl is-enabled` says."""
    state: str
    (state,) = await bus.call("GetUnitFileState", "s", [name])
    return state


async def active_state(bus: Bus, name: str) -> tuple[str, str]:
    """(ActiveState, SubState) of NAME, loading it if systemd has not."""
    (path,) = await bus.call("LoadUnit", "s", [name])
    unit = await bus.get_all(path, UNIT_IFACE)
    active: str = unit.get("ActiveState", "?")
    sub: str = unit.get("SubState", "?")
    return active, sub


async def service_property(bus: Bus, name: str, prop: str) -> Any:
    (path,) = await bus.call("LoadUnit", "s", [name])
    return await bus.get(path, SERVICE_IFACE, prop)


async def start(bus: Bus, name: str, *, restart: bool = False, timeout: float = 20.0) -> str:
    """StartUnit (or RestartUnit when its files changed), then wait until the
    unit is active; returns the ActiveState it settled in."""
    await bus.call("RestartUnit" if restart else "StartUnit", "ss", [name, "replace"])
    return await wait_settled(bus, name, timeout)


async def wait_settled(bus: Bus, name: str, timeout: float) -> str:
    """Until no job is pending on NAME and it is active, failed or inactive.
    A short poll while a job we queued runs; the node itself never polls (D26)."""
    (path,) = await bus.call("LoadUnit", "s", [name])
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    seen = "?"
    while loop.time() < deadline:
        unit = await bus.get_all(path, UNIT_IFACE)
        seen = str(unit.get("ActiveState", "?"))  # 's'
        job_id = (unit.get("Job") or [0])[0]
        if job_id == 0 and seen in SETTLED:
            return seen
        await asyncio.sleep(0.05)
    return seen


async def queue_start(bus: Bus, name: str) -> None:
    """StartUnit without waiting for it: a oneshot such as a node's check
    (D6) is queued, and a start asked while one runs joins it."""
    await bus.call("StartUnit", "ss", [name, "replace"])


async def try_restart(bus: Bus, name: str) -> None:
    """TryRestartUnit without waiting: NAME restarts only if it is running (a stopped one stays
    stopped), and a unit may ask this of itself: the job is PID 1's, not the caller's."""
    await bus.call("TryRestartUnit", "ss", [name, "replace"])


EXEC_PROPERTIES = ("ExecStartPre", "ExecStart", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost")


async def command_words(bus: Bus, patterns: list[str]) -> dict[str, list[str]]:
    """Each loaded service matching PATTERNS (globs) → the paths and arguments of its Exec* commands,
    as systemd holds them: what a unit would run, its stop step too (D47: which release it names)."""
    from .errors import BusError

    found: dict[str, list[str]] = {}
    for unit in await bus.list_units_by_patterns(patterns):
        name, path = str(unit[0]), str(unit[6])
        if not name.endswith(".service"):
            continue
        try:
            props = await bus.get_all(path, SERVICE_IFACE)
        except BusError:  # collected meanwhile: it names nothing now
            continue
        words: list[str] = []
        for prop in EXEC_PROPERTIES:
            for command in props.get(prop) or []:  # a(sasbttttuii): path, argv, ignore failure, ...
                words.append(str(command[0]))
                words.extend(str(word) for word in command[1])
        found[name] = words
    return found
