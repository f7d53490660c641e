"""A child process of the node moved into a scope of its own, bounded (D41; docs/security.md, 'Class 9').

A `fossil` the node's service starts on a run's behalf (the pull into the
runs' clone above all) handles bytes a run sent: 200 MB of zeros is 200 KB
on the wire and 400 MB in Fossil's memory. In the service's own cgroup that
memory is the node's, and its `MemoryMax` would kill the node. So each such
child is moved, before it does anything (program.py holds it until told),
into a transient scope with its own `MemoryMax` and `TasksMax`: the kernel
kills the child there, never the node, and the node goes on.

StartTransientUnit over libsystemd's sd-bus (sd_bus.py's connection), which
is synchronous: the caller is a plain function (fossil/program.py's hook),
called from the node's loop or a worker thread alike. The scope is started
once systemd's job for it has run, which the method's reply does not wait
for: the child's own cgroup, read from /proc (cgroup.unit_of), says when it
is there.
"""
from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable

from .cgroup import unit_of
from .errors import BusUnreadable
from .sd_bus import _P, MANAGER, MANAGER_PATH, TIMEOUT_USEC, SystemBus, _Error, _Message

MOVED_WITHIN_SECONDS = 10.0  # systemd's job for a scope runs in milliseconds; a busy PID 1 in far less than this


def _append_property(message: _Message, name: str, signature: str, value: object) -> None:
    lib, pointer = message.lib, message.pointer
    check = _Message._check
    check(lib.sd_bus_message_open_container(pointer, b"r", b"sv"))
    message.append(b"s", name)
    check(lib.sd_bus_message_open_container(pointer, b"v", signature.encode()))
    if signature == "s":
        message.append(b"s", value)
    elif signature == "t" and isinstance(value, int):
        number = ctypes.c_uint64(value)
        check(lib.sd_bus_message_append_basic(pointer, b"t", ctypes.cast(ctypes.pointer(number), _P)))
    elif signature == "as":
        message.append(b"as", value)
    elif signature == "au" and isinstance(value, (list, tuple)):
        check(lib.sd_bus_message_open_container(pointer, b"a", b"u"))
        for item in value:
            small = ctypes.c_uint32(item)
            check(lib.sd_bus_message_append_basic(pointer, b"u", ctypes.cast(ctypes.pointer(small), _P)))
        check(lib.sd_bus_message_close_container(pointer))
    else:
        raise ValueError(f"cannot append a property of type {signature!r}")
    check(lib.sd_bus_message_close_container(pointer))
    check(lib.sd_bus_message_close_container(pointer))


def scope_properties(pid: int, description: str, memory_max: int, tasks_max: int,
                     bound_to: str | None = None) -> list[tuple[str, str, object]]:
    """What the scope is: PID alone, its limits, gone from systemd's list once it ends however it ended;
    stopped with BOUND_TO (the node's service: killed or restarted, its children go with it, as they
    did in its own cgroup)."""
    return [("Description", "s", description), ("PIDs", "au", [pid]), ("MemoryMax", "t", memory_max),
            ("MemorySwapMax", "t", 0), ("TasksMax", "t", tasks_max), ("CollectMode", "s", "inactive-or-failed"),
            *([("BindsTo", "as", [bound_to])] if bound_to else [])]


def confine(pid: int, name: str, *, description: str, memory_max: int, tasks_max: int,
            bound_to: str | None = None) -> None:
    """Move PID into a new scope NAME (`….scope`) with MEMORY_MAX bytes and TASKS_MAX processes, stopped
    with the unit BOUND_TO; return once it is there. BusUnreadable if systemd refused or it did not get
    there in time."""
    with _manager() as bus:
        call = bus._call(MANAGER_PATH, MANAGER, b"StartTransientUnit", [(b"s", name), (b"s", "fail")])
        error, reply = _Error(), _P()
        try:
            message = _Message(bus.lib, call)
            _Message._check(bus.lib.sd_bus_message_open_container(call, b"a", b"(sv)"))
            for prop in scope_properties(pid, description, memory_max, tasks_max, bound_to):
                _append_property(message, *prop)
            _Message._check(bus.lib.sd_bus_message_close_container(call))
            _Message._check(bus.lib.sd_bus_message_open_container(call, b"a", b"(sa(sv))"))
            _Message._check(bus.lib.sd_bus_message_close_container(call))
            code = bus.lib.sd_bus_call(bus.bus, call, TIMEOUT_USEC, ctypes.byref(error), ctypes.byref(reply))
            if code < 0:
                why = (error.message or b"").decode("utf-8", "replace") or os.strerror(-code)
                raise BusUnreadable(f"StartTransientUnit {name}: {why}")
        finally:
            bus.lib.sd_bus_error_free(ctypes.byref(error))
            bus.lib.sd_bus_message_unref(call)
            if reply:
                bus.lib.sd_bus_message_unref(reply)
    deadline = time.monotonic() + MOVED_WITHIN_SECONDS
    while unit_of(pid) != name:
        if time.monotonic() > deadline:
            raise BusUnreadable(f"{pid} was not moved into {name} within {MOVED_WITHIN_SECONDS:.0f} s")
        time.sleep(0.005)  # the job's end is not signalled to a plain call; the child waits meanwhile


def _manager() -> SystemBus:
    """PID 1's private socket, as root's `systemctl` asks it (no dbus-daemon between: a connection to it
    was authenticated, named and announced to every listener for each `fossil` the node ran); the
    system bus where that socket cannot be had."""
    try:
        return SystemBus(private=True)
    except BusUnreadable:
        return SystemBus()


def confiner(prefix: str, *, memory_max: int, tasks_max: int,
             bound_to: str | None = None) -> Callable[[int, str], None]:
    """A `confine(pid, subcommand)` for fossil/program.py's `confine_children`: each child in a scope of
    its own, named PREFIX, its pid and a token (a pid is reused; a scope of a child ended is
    collected), described by its subcommand (what `systemctl list-units '*.scope'` and the journal
    show of it: never its arguments), bound to BOUND_TO, by default the service this process runs in
    (none outside one)."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in prefix)
    if bound_to is None:
        own = unit_of(os.getpid())
        bound_to = own if own and own.endswith(".service") else None

    def confine_one(pid: int, subcommand: str = "") -> None:
        word = "".join(c for c in subcommand if c.isascii() and (c.isalnum() or c in "-_"))[:32]
        confine(pid, f"{safe}-{pid}-{os.urandom(3).hex()}.scope", description=f"{prefix}: fossil {word} ({pid})",
                memory_max=memory_max, tasks_max=tasks_max, bound_to=bound_to)
    return confine_one
