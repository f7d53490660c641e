"""The system bus, and systemd's Manager on it (the only dbus-next user).

Low-level Messages rather than proxy objects: no introspection round trip,
and the property signatures are ours (units.properties), not guessed.
dbus-next is imported here only, and this module is imported only by code
that talks to systemd, so `ocx hook`'s start-up does not pay for it (D5).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from dbus_next.aio.message_bus import MessageBus
from dbus_next.constants import BusType, MessageType
from dbus_next.errors import AuthError
from dbus_next.message import Message
from dbus_next.signature import Variant

from .errors import BusError, BusUnreadable, Property

CALL_TIMEOUT_SECONDS = 25.0  # D-Bus's own default for a method call; a busy PID 1 answers well within it
SYSTEMD = "org.freedesktop.systemd1"
MANAGER_PATH = "/org/freedesktop/systemd1"
MANAGER = "org.freedesktop.systemd1.Manager"
PROPS = "org.freedesktop.DBus.Properties"


def plain(value: Any) -> Any:
    """Variants (nested too) unwrapped to plain Python values."""
    if isinstance(value, Variant):
        return plain(value.value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def variants(props: Sequence[Property]) -> tuple[list[list[Any]], list[int]]:
    """`a(sv)` body and the unix_fds it refers to.

    A property of signature 'h' carries an open fd; in the message it
    becomes an index into unix_fds (needs negotiate_unix_fd).
    """
    body, fds = [], []
    for name, sig, value in props:
        if sig == "h":
            fds.append(value)
            value = len(fds) - 1
        body.append([name, Variant(sig, value)])
    return body, fds


class Bus:
    """One connection to the system bus."""

    def __init__(self, bus: MessageBus):
        self._bus = bus
        self._watchers: dict[str, list[Callable[[str, dict[str, Any]], None]]] = {}
        self._matched: set[str] = set()
        self._manager_watchers: dict[str, list[Callable[[list[Any]], None]]] = {}
        self._systemd_owner: str | None = None  # PID 1's unique name on the bus, once asked
        bus.add_message_handler(self._on_message)

    @classmethod
    async def connect(cls, negotiate_unix_fd: bool = False,
                      address: str | None = None) -> Bus:
        kw = {"bus_address": address} if address else {"bus_type": BusType.SYSTEM}
        try:
            bus = await MessageBus(negotiate_unix_fd=negotiate_unix_fd, **kw).connect()
        except (OSError, EOFError, ValueError, AuthError) as error:  # faults.py reads the cause
            raise BusUnreadable(f"the system bus: {error}") from error
        return cls(bus)

    @property
    def connected(self) -> bool:
        connected: bool = self._bus.connected  # dbus-next leaves the property unannotated
        return connected

    def close(self) -> None:
        disconnect: Callable[[], None] = self._bus.disconnect  # dbus-next leaves it unannotated
        disconnect()

    async def call(self, member: str, signature: str = "", body: Sequence[Any] = (),
                   *, path: str = MANAGER_PATH, interface: str = MANAGER,
                   destination: str = SYSTEMD, unix_fds: Sequence[int] = ()) -> list[Any]:
        try:
            reply = await asyncio.wait_for(self._bus.call(Message(
                destination=destination, path=path, interface=interface, member=member,
                signature=signature, body=list(body), unix_fds=list(unix_fds))), CALL_TIMEOUT_SECONDS)
        except TimeoutError:
            # A fault that passes (C4): the caller tries again later.
            raise BusError("ocx.Timeout", f"{member}: no reply within {CALL_TIMEOUT_SECONDS:.0f} s") from None
        # None only for a message flagged NO_REPLY_EXPECTED, which these are not.
        assert reply is not None
        if reply.message_type == MessageType.ERROR:
            raise BusError(reply.error_name or "?", str(reply.body[0]) if reply.body else "")
        body_read: list[Any] = reply.body
        return body_read

    # --- Manager ------------------------------------------------------------

    async def start_transient_unit(self, name: str, props: Sequence[Property], mode: str = "fail",
                                   aux: Sequence[tuple[str, Sequence[Property]]] = ()) -> str:
        """StartTransientUnit; returns the job's path (the job may still run).
        AUX: units made with it and not started, e.g. the service a timer starts."""
        body, fds = variants(props)
        if fds and not self._bus._negotiate_unix_fd:
            raise BusError("ocx.NoUnixFd", "connect with negotiate_unix_fd=True to pass fds")
        auxiliary = []
        for aux_name, aux_props in aux:
            aux_body, aux_fds = variants(aux_props)
            if aux_fds:
                raise BusError("ocx.NoUnixFd", f"{aux_name}: no file descriptors in an auxiliary unit")
            auxiliary.append([aux_name, aux_body])
        job: str  # 'o'
        (job,) = await self.call("StartTransientUnit", "ssa(sv)a(sa(sv))",
                                 [name, mode, body, auxiliary], unix_fds=fds)
        return job

    async def stop_unit(self, name: str, mode: str = "replace") -> str:
        job: str  # 'o'
        (job,) = await self.call("StopUnit", "ss", [name, mode])
        return job

    async def kill_unit(self, name: str, signo: int, whom: str = "all") -> None:
        await self.call("KillUnit", "ssi", [name, whom, signo])

    async def get_unit(self, name: str) -> str | None:
        """The unit's object path, or None when systemd has no such unit."""
        path: str  # 'o'
        try:
            (path,) = await self.call("GetUnit", "s", [name])
        except BusError as e:
            if e.name == "org.freedesktop.systemd1.NoSuchUnit":
                return None
            raise
        return path

    async def list_units_by_patterns(self, patterns: Sequence[str], states: Sequence[str] = ()) -> list[list[Any]]:
        """The loaded units whose names match PATTERNS (shell globs): each
        (name, description, load, active, sub, following, path, job id, job type, job path)."""
        units: list[list[Any]]  # 'a(ssssssouso)'
        (units,) = await self.call("ListUnitsByPatterns", "asas", [list(states), list(patterns)])
        return units

    async def reset_failed_unit(self, name: str) -> None:
        await self.call("ResetFailedUnit", "s", [name])

    async def ref_unit(self, name: str) -> None:
        await self.call("RefUnit", "s", [name])

    async def unref_unit(self, name: str) -> None:
        await self.call("UnrefUnit", "s", [name])

    async def subscribe(self) -> None:
        # Without Subscribe, systemd emits no unit signals to anyone (notes).
        await self.call("Subscribe")

    async def get_all(self, path: str, interface: str) -> dict[str, Any]:
        (props,) = await self.call("GetAll", "s", [interface], path=path, interface=PROPS)
        values: dict[str, Any] = plain(props)  # 'a{sv}'
        return values

    async def get(self, path: str, interface: str, prop: str, destination: str = SYSTEMD) -> Any:
        (value,) = await self.call("Get", "ss", [interface, prop], path=path, interface=PROPS,
                                   destination=destination)
        return plain(value)

    # --- signals ------------------------------------------------------------

    async def add_match(self, rule: str) -> None:
        if rule in self._matched:
            return
        await self.call("AddMatch", "s", [rule], path="/org/freedesktop/DBus",
                        interface="org.freedesktop.DBus", destination="org.freedesktop.DBus")
        self._matched.add(rule)

    async def watch_properties(self, path: str,
                               callback: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]:
        """Call `callback(interface, changed)` on each PropertiesChanged of
        the object at `path`; returns a function that stops watching."""
        self._watchers.setdefault(path, []).append(callback)
        await self.add_match(f"type='signal',sender='{SYSTEMD}',path='{path}',"
                             f"interface='{PROPS}',member='PropertiesChanged'")

        def unwatch() -> None:
            cbs = self._watchers.get(path, [])
            if callback in cbs:
                cbs.remove(callback)
        return unwatch

    async def watch_manager(self, member: str, callback: Callable[[list[Any]], None]) -> None:
        """Call `callback(body)` on each of the Manager's signals MEMBER (JobRemoved, say);
        systemd sends them only to a connection that called Subscribe."""
        self._manager_watchers.setdefault(member, []).append(callback)
        # A signal sent to this connection alone reaches it whatever its matches: only PID 1's own count.
        (self._systemd_owner,) = await self.call("GetNameOwner", "s", [SYSTEMD], path="/org/freedesktop/DBus",
                                                 interface="org.freedesktop.DBus", destination="org.freedesktop.DBus")
        await self.add_match(f"type='signal',sender='{SYSTEMD}',path='{MANAGER_PATH}',"
                             f"interface='{MANAGER}',member='{member}'")

    def _on_message(self, msg: Message) -> bool:
        if (msg.message_type == MessageType.SIGNAL and msg.interface == MANAGER and msg.path == MANAGER_PATH
                and msg.member in self._manager_watchers and msg.sender == self._systemd_owner):
            for manager_cb in list(self._manager_watchers[msg.member]):
                manager_cb(list(msg.body))
        if (msg.message_type == MessageType.SIGNAL and msg.interface == PROPS
                and msg.member == "PropertiesChanged" and msg.path in self._watchers):
            interface, changed = msg.body[0], plain(msg.body[1])
            for cb in list(self._watchers[msg.path]):
                cb(interface, changed)
        return False   # never consume: other handlers may want it


async def wait_closed(bus: Bus, timeout: float) -> None:
    wait_for_disconnect: Callable[[], Awaitable[None]] = bus._bus.wait_for_disconnect  # dbus-next: unannotated
    await asyncio.wait_for(wait_for_disconnect(), timeout)
