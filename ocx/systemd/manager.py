"""The operations on systemd a node needs: start a transient service, stop
it, read its state and CPU time, and see its end from D-Bus signals (D4).

`Systemd` holds one system-bus connection. `run()` sets up the watch of a
unit's signals *before* starting it, so a program that ends at once is not
missed; `Run.ended()` then returns its End. AddRef (on by default in
units.TransientService) keeps a unit that exited 0 until `release()` or
until this connection closes, so its end can still be read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import cgroup
from .units import SERVICE_IFACE, UNIT_IFACE, End, EndTracker, TransientService, properties, unit_path

if TYPE_CHECKING:                      # bus imports dbus-next: keep it lazy
    from .bus import Bus
    from .timers import TransientTimer

UINT64_MAX = 2**64 - 1


@dataclass(frozen=True)
class UnitState:
    name: str
    active_state: str
    sub_state: str
    result: str | None
    main_pid: int | None
    control_group: str | None
    exec_main_code: int | None
    exec_main_status: int | None
    cpu_usage_nsec: int | None       # None when systemd does not account it


@dataclass(frozen=True)
class ListedUnit:
    """A loaded unit as ListUnits shows it: its live state, nothing more."""
    name: str
    active_state: str
    sub_state: str
    description: str
    job: str = ""                    # the type of a job queued for it ("start", "stop"), or ""
    # "not-found": a name only referred to (a timer's StopPropagatedFrom, say), never made
    load_state: str = "loaded"


class Run:
    """A started (or starting) unit whose end is being watched."""

    def __init__(self, systemd: Systemd, name: str):
        self.systemd = systemd
        self.name = name
        self.path = unit_path(name)
        self.tracker = EndTracker(name)
        self.job: str | None = None
        self._done: asyncio.Future[End] = asyncio.get_running_loop().create_future()
        self._unwatch: Callable[[], None] | None = None

    def _on_change(self, interface: str, changed: dict[str, Any]) -> None:
        end = self.tracker.feed(interface, changed)
        if end is not None and not self._done.done():
            self._done.set_result(end)

    async def ended(self, timeout: float | None = None) -> End:
        """The unit's End, once it has ended (signals, no polling)."""
        end = await asyncio.wait_for(asyncio.shield(self._done), timeout)
        if self._unwatch:
            self._unwatch()
            self._unwatch = None
        if None in (end.result, end.code, end.status):
            # A signal carried only some of the Service's properties; with
            # AddRef the unit still exists, so its own values are current.
            got = await self.systemd.service_properties(self.name)
            if got:
                end = self.tracker.snapshot(end.active_state, {
                    k: v for k, v in got.items() if k not in self.tracker.service})
        return end

    async def state(self) -> UnitState | None:
        return await self.systemd.state(self.name)


class Systemd:
    """systemd's Manager over one system-bus connection."""

    def __init__(self, bus: Bus):
        self.bus = bus
        self._subscribed = False

    @classmethod
    async def connect(cls, negotiate_unix_fd: bool = False) -> Systemd:
        from .bus import Bus

        return cls(await Bus.connect(negotiate_unix_fd=negotiate_unix_fd))

    async def __aenter__(self) -> Systemd:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Disconnecting also drops every AddRef this connection holds."""
        self.bus.close()

    async def _subscribe(self) -> None:
        if not self._subscribed:
            await self.bus.subscribe()
            self._subscribed = True

    async def subscribe(self) -> None:
        """systemd's signals to this connection (JobRemoved, PropertiesChanged), asked for once."""
        await self._subscribe()

    async def running_leader(self, name: str) -> tuple[int, str] | None:
        """The running unit's main process and its Description, or None when it does not run (yet)."""
        path = await self.bus.get_unit(name)
        if path is None:
            return None
        unit = await self.bus.get_all(path, UNIT_IFACE)
        main_pid = await self.bus.get(path, SERVICE_IFACE, "MainPID")
        if unit.get("ActiveState") != "active" or not main_pid:
            return None
        return int(main_pid), str(unit.get("Description", ""))

    async def start(self, service: TransientService) -> str:
        """Start it without watching; returns the job path."""
        return await self.bus.start_transient_unit(service.name, properties(service))

    async def start_timer(self, timer: TransientTimer, service: TransientService, replace: bool = False) -> str:
        """Start TIMER with SERVICE made alongside, to be started when it fires. REPLACE: a
        timer of its name left by an earlier attempt (a node cut off before it started what
        the timer watches) is stopped and this one started in its place (D5)."""
        from . import timers
        from .errors import BusError

        if service.name != timer.service:
            raise ValueError(f"{timer.name} starts {timer.service}, not {service.name}")
        for _ in range(20 if replace else 1):
            try:
                return await self.bus.start_transient_unit(timer.name, timers.properties(timer),
                                                           aux=[(service.name, properties(service))])
            except BusError as error:
                if not replace or error.name != "org.freedesktop.systemd1.UnitExists":
                    raise
            for name in (timer.name, service.name):
                for step in (self.stop, self.reset_failed):
                    try:
                        await step(name)
                    except BusError:
                        pass  # not loaded, or not failed
            await asyncio.sleep(0.05)  # collected on systemd's next turn
        raise RuntimeError(f"{timer.name}: systemd still holds an earlier timer of this name")

    async def start_once(self, service: TransientService, attempts: int = 20) -> bool:
        """Start it unless a unit of its name already runs (D5: asking twice
        is harmless); True when this call started it. A unit of its name left
        failed by an earlier attempt is reset first: a transient unit's name
        is taken until systemd collects it."""
        from .errors import BusError

        for _ in range(attempts):
            try:
                await self.start(service)
                return True
            except BusError as error:
                if error.name != "org.freedesktop.systemd1.UnitExists":
                    raise
            active = await self.active_state(service.name)  # the git mirror's, asked on each pass of a burst
            if active is not None and active != "failed":
                return False  # running, or about to (a start job queued)
            if active is not None:
                try:
                    await self.reset_failed(service.name)
                except BusError:
                    pass
            await asyncio.sleep(0.05)  # collected on systemd's next turn
        raise RuntimeError(f"{service.name}: systemd still holds an earlier unit of this name")

    async def run(self, service: TransientService) -> Run:
        """Watch, then start; `await run.ended()` gives its End."""
        props = properties(service)         # refuse before touching the bus
        await self._subscribe()
        run = Run(self, service.name)
        run._unwatch = await self.bus.watch_properties(run.path, run._on_change)
        try:
            run.job = await self.bus.start_transient_unit(service.name, props)
        except BaseException:
            run._unwatch()
            raise
        return run

    async def watch(self, name: str) -> Run:
        """Watch a unit that is already running (e.g. after a node restart)."""
        await self._subscribe()
        run = Run(self, name)
        run.tracker.started = True          # no stale pair: it is running
        run._unwatch = await self.bus.watch_properties(run.path, run._on_change)
        st = await self.state(name)
        if st is None or st.active_state in ("inactive", "failed"):
            run._on_change(SERVICE_IFACE, {
                "Result": st.result if st else None,
                "ExecMainCode": st.exec_main_code if st else None,
                "ExecMainStatus": st.exec_main_status if st else None})
            run._on_change(UNIT_IFACE, {"ActiveState": st.active_state if st else "inactive"})
        return run

    async def stop(self, name: str) -> None:
        await self.bus.stop_unit(name)

    async def kill(self, name: str, signo: int, whom: str = "all") -> None:
        await self.bus.kill_unit(name, signo, whom)

    async def release(self, name: str) -> None:
        """Drop the AddRef reference; the unit may be collected at once."""
        from .errors import BusError

        try:
            await self.bus.unref_unit(name)
        except BusError as e:
            if e.name != "org.freedesktop.systemd1.NoSuchUnit":
                raise

    async def reset_failed(self, name: str) -> None:
        await self.bus.reset_failed_unit(name)

    async def service_properties(self, name: str) -> dict[str, Any] | None:
        path = await self.bus.get_unit(name)
        if path is None:
            return None
        return await self.bus.get_all(path, SERVICE_IFACE)

    async def state(self, name: str) -> UnitState | None:
        """The unit as systemd holds it now, or None when it has no such
        unit (GetAll on a vanished unit's path returns a stub: GetUnit
        first, notes)."""
        path = await self.bus.get_unit(name)
        if path is None:
            return None
        u = await self.bus.get_all(path, UNIT_IFACE)
        s = await self.bus.get_all(path, SERVICE_IFACE)
        cpu = s.get("CPUUsageNSec")
        return UnitState(
            name=name, active_state=u.get("ActiveState", "?"),
            sub_state=u.get("SubState", "?"), result=s.get("Result"),
            main_pid=s.get("MainPID") or None,
            control_group=s.get("ControlGroup") or None,
            exec_main_code=s.get("ExecMainCode"),
            exec_main_status=s.get("ExecMainStatus"),
            cpu_usage_nsec=None if cpu in (None, UINT64_MAX) else cpu)

    async def active_state(self, name: str) -> str | None:
        """The unit's ActiveState, as state() says it, or None when systemd has no such unit: one
        property, not state()'s two GetAll replies of a hundred and more (a burst's pass asked it of
        each run waiting to start, D24)."""
        path = await self.bus.get_unit(name)
        if path is None:
            return None
        return str(await self.bus.get(path, UNIT_IFACE, "ActiveState"))

    async def units(self, patterns: list[str]) -> list[ListedUnit]:
        """The units systemd holds now whose names match PATTERNS (globs),
        by name; a transient unit that ended and was collected is not among them."""
        listed = await self.bus.list_units_by_patterns(patterns)
        return sorted((ListedUnit(name=u[0], active_state=u[3], sub_state=u[4], description=u[1],
                                  job=u[8] if u[7] else "", load_state=u[2]) for u in listed),
                      key=lambda unit: unit.name)

    async def cpu_usec(self, name: str) -> int | None:
        """CPU time of all the unit's processes so far, in microseconds (D17
        cpu), or None when it is not running. On cgroup v1 hybrid systemd
        leaves CPUUsageNSec unset, so the cgroup2 cpu.stat is read."""
        st = await self.state(name)
        if st is None:
            return None
        if st.cpu_usage_nsec is not None:
            return st.cpu_usage_nsec // 1000
        if st.control_group is None:
            return None
        return cgroup.cpu_usage_usec(st.control_group)

    async def memory_evidence(self, name: str) -> cgroup.MemoryEvidence | None:
        """The running unit's memory cgroup counters (see cgroup.py)."""
        st = await self.state(name)
        if st is None or st.control_group is None:
            return None
        return cgroup.memory_evidence(st.control_group)
