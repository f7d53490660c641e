"""systemd-machined on the system bus: a run's unit registered as a machine (D3, D32).

`machinectl list`, `status`, `show`, `kill` and `terminate` then reach a run
by its machine's name. RegisterMachine makes no scope: machined takes the
unit the leader process is in (systemd 252, machined-dbus.c: cg_pid_get_unit)
and follows that unit, so the machine is gone once the unit has ended. Only
root may register (machined's bus policy); the node does it, never a run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import BusError

if TYPE_CHECKING:                      # bus imports dbus-next: keep it lazy
    from .bus import Bus

MACHINED = "org.freedesktop.machine1"
MACHINED_PATH = "/org/freedesktop/machine1"
MACHINED_MANAGER = "org.freedesktop.machine1.Manager"
MACHINE_IFACE = "org.freedesktop.machine1.Machine"
CONTAINER = "container"  # machinectl's class for a unit of the host's kernel, not a VM
MACHINE_EXISTS = "org.freedesktop.machine1.MachineExists"
NO_SUCH_MACHINE = "org.freedesktop.machine1.NoSuchMachine"
# machined's own check is hostname_is_valid: labels of letters, digits and '-', 64 characters at most.
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
_SERVICE_CHARACTERS = re.compile(r"[^A-Za-z0-9 ._@:+-]")
SERVICE_MAX = 128  # `machinectl list` prints it in a column: a line, not a paragraph


def valid_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def service_text(text: str) -> str:
    """TEXT as machined's service field: printable ASCII of a few kinds, one line, bounded."""
    return _SERVICE_CHARACTERS.sub("?", text)[:SERVICE_MAX]


@dataclass(frozen=True)
class Machine:
    name: str
    machine_class: str
    service: str
    path: str


async def register(bus: Bus, name: str, service: str, leader: int) -> str:
    """RegisterMachine: NAME for the unit LEADER runs in; its object path. Raises BusError
    (MACHINE_EXISTS when one of that name is registered already)."""
    if not valid_name(name):
        raise ValueError(f"{name!r} is not a machine name (hostname-like, 64 characters at most)")
    path: str  # 'o'
    (path,) = await bus.call("RegisterMachine", "sayssus", [name, b"", service_text(service), CONTAINER,
                                                           leader, ""],
                             path=MACHINED_PATH, interface=MACHINED_MANAGER, destination=MACHINED)
    return path


async def unregister(bus: Bus, name: str) -> None:
    """UnregisterMachine: machined forgets it; its unit runs on untouched."""
    await bus.call("UnregisterMachine", "s", [name], path=MACHINED_PATH, interface=MACHINED_MANAGER,
                   destination=MACHINED)


async def machines(bus: Bus) -> list[Machine]:
    """ListMachines: each machine machined holds now."""
    listed: list[list[str]]  # 'a(ssso)'
    (listed,) = await bus.call("ListMachines", path=MACHINED_PATH, interface=MACHINED_MANAGER,
                               destination=MACHINED)
    return [Machine(name, machine_class, service, path) for name, machine_class, service, path in listed]


async def unit_of(bus: Bus, name: str) -> str | None:
    """The unit machined took for machine NAME, or None when it holds no such machine."""
    try:
        (path,) = await bus.call("GetMachine", "s", [name], path=MACHINED_PATH, interface=MACHINED_MANAGER,
                                 destination=MACHINED)
        unit = await bus.get(path, MACHINE_IFACE, "Unit", destination=MACHINED)
    except BusError as error:
        if error.name == NO_SUCH_MACHINE or error.name.endswith(".UnknownObject"):
            return None
        raise
    return str(unit)
