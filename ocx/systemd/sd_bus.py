"""Reading units' properties from systemd with libsystemd's own sd-bus, many at once.

The console (ocx/page/console) shows every open record's unit on each
request and must answer in 200 ms (docs/console.md, 'Fast'): dbus-next and pystemd each
cost 60 to 100 ms to import before the first call, and one round trip per
property per unit adds a millisecond each on a busy host. Here libsystemd
is opened with ctypes (a few ms), ListUnitsByPatterns gives every unit's
state in one call, and the Get calls for all units are sent at once and
their replies read as they come (sd_bus_call_async).

Read-only: nothing here changes a unit. Any failure (no libsystemd, no
system bus) is one `BusUnreadable` saying why, so a reader can show the
rest of what it knows.
"""
from __future__ import annotations

import ctypes
import functools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import BusUnreadable as BusUnreadable  # what this module raises: its callers catch it from here

if TYPE_CHECKING:
    from _ctypes import CFuncPtr

SYSTEMD = b"org.freedesktop.systemd1"
MANAGER_PATH = b"/org/freedesktop/systemd1"
MANAGER = b"org.freedesktop.systemd1.Manager"
PROPERTIES = b"org.freedesktop.DBus.Properties"
UNIT = "org.freedesktop.systemd1.Unit"
SERVICE = "org.freedesktop.systemd1.Service"
JOB = "org.freedesktop.systemd1.Job"
# PID 1's own socket, root's: what `systemctl` uses as root. No dbus-daemon between (its connection's
# authentication, Hello and name signals to every listener), and it still answers while the system
# bus goes down with the system.
PRIVATE_ADDRESS = b"unix:path=/run/systemd/private"
TIMEOUT_USEC = 2_000_000  # a reply not here by then is not waited for
IN_FLIGHT = 64  # calls waiting for their reply at once


@dataclass(frozen=True)
class Listed:
    """A loaded unit as ListUnitsByPatterns gives it."""

    name: str
    description: str
    active_state: str
    sub_state: str


class _Error(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("message", ctypes.c_char_p), ("need_free", ctypes.c_int)]


_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_P = ctypes.c_void_p


@functools.cache  # opened once a process: a forked step (run_steps/step_server.py) has it already
def library() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL("libsystemd.so.0")
    except OSError as error:
        raise BusUnreadable(f"libsystemd is not here: {error}") from None
    signatures = {
        "sd_bus_open_system": ([ctypes.POINTER(_P)], ctypes.c_int),
        "sd_bus_new": ([ctypes.POINTER(_P)], ctypes.c_int),
        "sd_bus_set_address": ([_P, ctypes.c_char_p], ctypes.c_int),
        "sd_bus_start": ([_P], ctypes.c_int),
        "sd_bus_flush_close_unref": ([_P], _P),
        "sd_bus_message_new_method_call": ([_P, ctypes.POINTER(_P), ctypes.c_char_p, ctypes.c_char_p,
                                            ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int),
        "sd_bus_message_append_basic": ([_P, ctypes.c_char, _P], ctypes.c_int),
        "sd_bus_message_open_container": ([_P, ctypes.c_char, ctypes.c_char_p], ctypes.c_int),
        "sd_bus_message_close_container": ([_P], ctypes.c_int),
        "sd_bus_message_enter_container": ([_P, ctypes.c_char, ctypes.c_char_p], ctypes.c_int),
        "sd_bus_message_exit_container": ([_P], ctypes.c_int),
        "sd_bus_message_read_basic": ([_P, ctypes.c_char, _P], ctypes.c_int),
        "sd_bus_message_is_method_error": ([_P, ctypes.c_char_p], ctypes.c_int),
        "sd_bus_message_unref": ([_P], _P),
        "sd_bus_call": ([_P, _P, ctypes.c_uint64, ctypes.POINTER(_Error), ctypes.POINTER(_P)], ctypes.c_int),
        "sd_bus_call_async": ([_P, _P, _P, _HANDLER, _P, ctypes.c_uint64], ctypes.c_int),
        "sd_bus_process": ([_P, _P], ctypes.c_int),
        "sd_bus_wait": ([_P, ctypes.c_uint64], ctypes.c_int),
        "sd_bus_error_free": ([ctypes.POINTER(_Error)], None),
    }
    for name, (arguments, result) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = arguments, result
    return lib


class _Message:
    """Appending to and reading from one sd_bus_message (borrowed or owned)."""

    def __init__(self, lib: ctypes.CDLL, pointer: int):
        self.lib, self.pointer = lib, pointer

    def append(self, signature: bytes, value: object) -> None:
        if signature == b"s":
            held = ctypes.c_char_p(str(value).encode())
            self._check(self.lib.sd_bus_message_append_basic(self.pointer, b"s", held))
        elif signature == b"as" and isinstance(value, (list, tuple)):
            self._check(self.lib.sd_bus_message_open_container(self.pointer, b"a", b"s"))
            for item in value:
                self.append(b"s", item)
            self._check(self.lib.sd_bus_message_close_container(self.pointer))
        else:
            raise ValueError(f"cannot append {signature!r}")

    def read(self, kind: bytes) -> object:
        if kind in (b"s", b"o"):
            text = ctypes.c_char_p()
            self._check(self.lib.sd_bus_message_read_basic(self.pointer, kind, ctypes.byref(text)))
            return (text.value or b"").decode("utf-8", "replace")
        if kind == b"t":
            number = ctypes.c_uint64()
            self._check(self.lib.sd_bus_message_read_basic(self.pointer, b"t", ctypes.byref(number)))
            return number.value
        if kind == b"u":
            small = ctypes.c_uint32()
            self._check(self.lib.sd_bus_message_read_basic(self.pointer, b"u", ctypes.byref(small)))
            return small.value
        if kind[:1] == b"(" and kind[-1:] == b")":  # a struct of basic types: a tuple
            self.enter(b"r", kind[1:-1])
            fields = tuple(self.read(bytes([field])) for field in kind[1:-1])
            self.leave()
            return fields
        raise ValueError(f"cannot read {kind!r}")

    def enter(self, kind: bytes, contents: bytes) -> bool:
        """Into a container; False at the end of an array."""
        return self._check(self.lib.sd_bus_message_enter_container(self.pointer, kind, contents)) > 0

    def leave(self) -> None:
        self._check(self.lib.sd_bus_message_exit_container(self.pointer))

    @staticmethod
    def _check(code: int) -> int:
        if code < 0:
            raise BusUnreadable(f"sd-bus: {_errno_text(-code)}")
        return code


def _errno_text(number: int) -> str:
    import os

    return os.strerror(number)


class SystemBus:
    """One connection to the system bus, read-only; PRIVATE: to PID 1's own socket instead (root's
    alone). Use as a context manager."""

    def __init__(self, private: bool = False) -> None:
        self.lib = library()
        self.bus = _P()
        self._handlers: list[CFuncPtr] = []  # what _HANDLER makes
        if not private:
            code = self.lib.sd_bus_open_system(ctypes.byref(self.bus))
        elif (code := self.lib.sd_bus_new(ctypes.byref(self.bus))) >= 0:
            if (code := self.lib.sd_bus_set_address(self.bus, PRIVATE_ADDRESS)) >= 0:
                code = self.lib.sd_bus_start(self.bus)
            if code < 0:
                self.close()
        if code < 0:
            where = "systemd's private socket" if private else "the system bus"
            raise BusUnreadable(f"{where}: {_errno_text(-code)}")

    def __enter__(self) -> SystemBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.bus:
            self.lib.sd_bus_flush_close_unref(self.bus)
            self.bus = _P()

    def _call(self, path: bytes, interface: bytes, member: bytes, arguments: Sequence[tuple[bytes, object]]) -> int:
        message = _P()
        _Message._check(self.lib.sd_bus_message_new_method_call(self.bus, ctypes.byref(message), SYSTEMD, path,
                                                               interface, member))
        if not message.value:
            raise BusUnreadable(f"sd-bus made no message for {member.decode()}")
        written = _Message(self.lib, message.value)
        for signature, value in arguments:
            written.append(signature, value)
        return message.value

    def units(self, patterns: Iterable[str]) -> list[Listed]:
        """The loaded units whose names match PATTERNS (globs), with their state."""
        call = self._call(MANAGER_PATH, MANAGER, b"ListUnitsByPatterns", [(b"as", []), (b"as", list(patterns))])
        error, reply = _Error(), _P()
        try:
            code = self.lib.sd_bus_call(self.bus, call, TIMEOUT_USEC, ctypes.byref(error), ctypes.byref(reply))
            if code < 0:
                why = (error.message or b"").decode("utf-8", "replace") or _errno_text(-code)
                raise BusUnreadable(f"ListUnitsByPatterns: {why}")
            found = []
            if not reply.value:
                raise BusUnreadable("ListUnitsByPatterns: no reply")
            read = _Message(self.lib, reply.value)
            read.enter(b"a", b"(ssssssouso)")
            while read.enter(b"r", b"ssssssouso"):
                name, description, _load, active, sub, _following, _path, _job, _type, _job_path = (
                    read.read(bytes([kind])) for kind in b"ssssssouso")
                read.leave()
                found.append(Listed(str(name), str(description), str(active), str(sub)))
            read.leave()
            return sorted(found, key=lambda unit: unit.name)
        finally:
            self.lib.sd_bus_error_free(ctypes.byref(error))
            self.lib.sd_bus_message_unref(call)
            if reply:
                self.lib.sd_bus_message_unref(reply)

    def properties(self, asked: Sequence[tuple[str, str, str, bytes]]) -> list[object | None]:
        """Each (unit or object path, interface, property, its D-Bus type: s, t,
        u or a struct of them) asked at once; the values in the same order,
        None where systemd answered an error or nothing came within TIMEOUT_USEC."""
        from .units import unit_path  # here: `ocx activity` lists units only, and units.py costs its start-up

        values: list[object | None] = [None] * len(asked)
        waiting = {"count": 0}

        def on_reply(message: int, userdata: int | None, _error: int) -> int:
            index = userdata or 0
            waiting["count"] -= 1
            if self.lib.sd_bus_message_is_method_error(message, None) <= 0:
                read = _Message(self.lib, message)
                try:
                    kind = asked[index][3]
                    if read.enter(b"v", kind):
                        values[index] = read.read(kind)
                except BusUnreadable:
                    values[index] = None
            return 0

        handler = _HANDLER(on_reply)
        self._handlers.append(handler)  # held while the bus may still call it
        sent = 0
        deadline = time.monotonic() + TIMEOUT_USEC / 1_000_000 + 0.5
        while (sent < len(asked) or waiting["count"] > 0) and time.monotonic() < deadline:
            # The bus answers a connection's calls beyond its limit of pending
            # replies (dbus-daemon's max_replies_per_connection) with an error:
            # keep at most IN_FLIGHT waiting.
            while sent < len(asked) and waiting["count"] < IN_FLIGHT:
                unit, interface, name, _kind = asked[sent]
                path = unit if unit.startswith("/") else unit_path(unit)
                call = self._call(path.encode(), PROPERTIES, b"Get", [(b"s", interface), (b"s", name)])
                try:
                    _Message._check(self.lib.sd_bus_call_async(self.bus, None, call, handler, _P(sent),
                                                               TIMEOUT_USEC))
                finally:
                    self.lib.sd_bus_message_unref(call)
                waiting["count"] += 1
                sent += 1
            if _Message._check(self.lib.sd_bus_process(self.bus, None)) == 0:
                self.lib.sd_bus_wait(self.bus, 100_000)
        return values
