"""Each live run a machine of systemd-machined, named as its unit (D3, D27, D32).

An admin on the node lists runs with `machinectl list`, looks at one with
`machinectl status` and `show`, and ends one with `machinectl terminate` or
`kill` (docs/operating.md, 'An admin's round'). The node's service, as root,
registers each of its runs once its program started (RegisterMachine: no
scope, machined takes the unit the leader is in and follows it, so the machine
is gone when the unit ends); nothing here stops, kills or unregisters a run
that is the node's. The unit's name stays the index (D3): the machine's name
is the unit's without `.service`.

When a program started the node learns from PID 1's JobRemoved of the unit's
start job (a hint only: the unit's state and main process are then asked of
PID 1), and, for what it missed (its own restart, a bus reconnected), from a
sweep of its running units after each pass: asked of PID 1 once a connection
watches, and after that taken from the units the pass itself listed.
"""
from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

from ..node.faults import describe
from ..node.run_layout import parse_unit_name
from ..systemd import machines
from ..systemd.errors import BusError
from .context import NodeContext

_FULL_HASH = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{52}\b", re.ASCII)


def machine_name(unit: str) -> str:
    """`ocx-NODE12-RECORD12[-CHECKIN12]`, as its unit (D3)."""
    return unit.removesuffix(".service")


def machine_service(description: str) -> str:
    """What `machinectl list` and `status` print as the machine's service: the unit's Description
    (the record, the runner or check-in, the user; D3) with the record's hash as its first twelve digits."""
    return machines.service_text(_FULL_HASH.sub(r"\1", description))


class RunMachines:
    """The node's runs as machines, over the node's own connection to the system bus."""

    def __init__(self, context: NodeContext, systemd: Any):
        self.context = context
        self.systemd = systemd
        self.prefix = f"ocx-{context.server_code[:12]}-"
        self.registered: set[str] = set()  # machine names this service registered, or found registered
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._told: set[str] = set()  # units whose registration failed, told once at warning priority

    def ours(self, unit: str) -> bool:
        return (unit.startswith(self.prefix) and parse_unit_name(unit) is not None
                and machines.valid_name(machine_name(unit)))

    async def watch(self) -> None:
        """From now on, each run's start job done registers its machine at once."""
        await self.systemd.subscribe()
        await self.systemd.bus.watch_manager("JobRemoved", self._on_job_removed)

    def _on_job_removed(self, body: list[Any]) -> None:
        if len(body) == 4 and body[3] == "done" and isinstance(body[2], str) and self.ours(body[2]):
            self.soon(body[2])

    def soon(self, unit: str) -> None:
        """UNIT's registration, in its own task: one at a time for each machine."""
        name = machine_name(unit)
        if name in self.registered or name in self._pending:
            return
        task = asyncio.get_running_loop().create_task(self.register(unit))
        self._pending[name] = task
        task.add_done_callback(lambda _: self._pending.pop(name, None))

    async def sweep(self, listed: frozenset[str] | None = None) -> None:
        """Each running unit of this node's registered, the names of those that ended forgotten. LISTED:
        the run units active when the pass read systemd's units, so none is asked again here (a
        burst's every pass listed a hundred units twice); None: asked of systemd."""
        if listed is None:
            units = await self.systemd.units([f"{self.prefix}*.service"])
            listed = frozenset(u.name for u in units if u.active_state == "active")
        running = {name for name in listed if self.ours(name)}
        self.registered &= {machine_name(u) for u in running}
        self._told &= running | {"machined"}
        for unit in sorted(running):
            if machine_name(unit) not in self.registered and machine_name(unit) not in self._pending:
                await self.register(unit)

    async def register(self, unit: str) -> None:
        name, bus = machine_name(unit), self.systemd.bus
        try:
            leader = await self.systemd.running_leader(unit)
            if leader is None:
                return  # not running, or not yet: its start job's end, or the next sweep, comes back
            pid, description = leader
            try:
                await machines.register(bus, name, machine_service(description), pid)
            except BusError as error:
                if error.name != machines.MACHINE_EXISTS:
                    raise
            # machined took the unit its leader is in at that moment: a leader gone meanwhile, its
            # number taken by a process of another unit, would leave this name on that unit. Checked,
            # and undone without stopping anything.
            took = await machines.unit_of(bus, name)
            if took is not None and took != unit:
                await machines.unregister(bus, name)
                self.context.log(f"machine {name} was registered for {took}, not {unit}: unregistered", priority=3)
                return
        except BusError as error:
            if self.systemd.bus.connected and not await self._still_running(unit):
                return  # it ended while it was registered: nothing to list
            # Once each, and once in all when machined is not there (no systemd-container): each sweep tries again.
            told = "machined" if error.name == "org.freedesktop.DBus.Error.ServiceUnknown" else unit
            self.context.log(f"{unit} not registered as a machine: {error}", priority=7 if told in self._told else 4)
            self._told.add(told)
            return
        if took == unit:
            self.registered.add(name)
            self.context.log(f"{unit}: machine {name}", priority=7)

    async def _still_running(self, unit: str) -> bool:
        try:
            return await self.systemd.running_leader(unit) is not None
        except BusError:
            return True


class MachinesThread:
    """RunMachines on a bus connection and an event loop of their own, in a thread of the node's
    service: a pass's slow steps (a pull, a home made ahead) never hold up a run's listing. Each
    pass asks for a sweep (`sweep_soon`); nothing is done on a timer (D26)."""

    def __init__(self, context: NodeContext):
        self.context = context
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="ocx-machines", daemon=True)
        self._running: frozenset[str] | None = None  # the last pass's, or None: asked of systemd

    def start(self) -> None:
        self._thread.start()

    def sweep_soon(self, context: NodeContext, running: frozenset[str] | None = None) -> None:
        """After a pass: the runs registered that a signal did not bring (the context read again, too),
        from RUNNING, the run units the pass saw active (PassReport.running), if it read them."""
        self.context = context
        self._running = running
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            loop.call_soon_threadsafe(wake.set)

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        from ..systemd.manager import Systemd

        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        while True:
            try:
                systemd = await Systemd.connect()
            except Exception as error:  # no bus now: the next pass asks again
                self.context.log(f"runs not listed as machines: {describe(error)}", priority=4)
                await self._wait()
                continue
            runs = RunMachines(self.context, systemd)
            try:
                await runs.watch()
                listed = None  # watched from now on: what came before is asked of systemd once
                while systemd.bus.connected:
                    runs.context = self.context
                    await runs.sweep(listed)
                    await self._wait()
                    listed = self._running
            except Exception as error:  # no record waits on a listing: logged, and asked again at the next pass
                self.context.log(f"runs not listed as machines: {describe(error)}", priority=4)
                await self._wait()
            finally:
                systemd.close()

    async def _wait(self) -> None:
        assert self._wake is not None  # set first thing in _serve
        await self._wake.wait()
        self._wake.clear()
