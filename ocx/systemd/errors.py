"""What the systemd layer raises: one family, under OCX's one base (protocol/errors.py)."""
from __future__ import annotations

from typing import Any

from ..protocol.errors import OcxError

# One D-Bus property of a transient unit: (name, D-Bus signature, value). Values are lists, never
# tuples (dbus-next marshals only lists as arrays). Here, beside what a wrong one raises, so that
# units.py and the sandbox's properties (hardening.py) each take it from below, not from the other.
Property = tuple[str, str, Any]


class SystemdLayerError(OcxError):
    """systemd, D-Bus, the journal or the kernel (bpf) refused or could not be asked;
    each class below says which. Whether one passes by itself: passes() below (C4)."""


class UnitError(SystemdLayerError, ValueError):
    """A unit description systemd would refuse, caught before the bus (units.py, hardening.py, timers.py)."""


class BusUnreadable(SystemdLayerError):
    """systemd could not be asked (no system bus, no libsystemd, no permission):
    the reason, for a reader to show (sd_bus.py, and bus.py's connect)."""


class BusError(SystemdLayerError):
    """An error reply; `name` is the D-Bus error name. Here, not in bus.py, so
    the node catches it without loading dbus-next (bus.py re-exports it)."""

    def __init__(self, name: str, text: str):
        super().__init__(f"{name}: {text}")
        self.name = name
        self.text = text


# D-Bus errors that pass by themselves, by their names: systemd busy or
# restarting, the bus going away, or OCX's own wait for a reply ended (C4).
PASSING_NAMES = frozenset({
    "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
    "org.freedesktop.DBus.Error.TimedOut", "org.freedesktop.DBus.Error.Disconnected",
    "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
    "org.freedesktop.DBus.Error.LimitsExceeded", "ocx.Timeout",
})


def passes(error: BaseException) -> bool | None:
    """True or False for an error of this layer; None for any other."""
    if isinstance(error, BusError):
        return error.name in PASSING_NAMES
    return None
