"""Starting and stopping runs through systemd (C3, C5, D3, D19)."""
from __future__ import annotations

import time

from ...fossil.repository import Repository
from ...protocol.decide import OpenRecord
from ...protocol.deliveries import record_delivery
from ...systemd import loopback_filter
from .context import NodeContext
from ..layout import unit_name
from ..unit import cpu_watch
from ..records import RecordDir
from .runner_pages import RunnerPage
from ..unit.prepare import prepare_run
from .sessions import preparation, prepared_in_unit, session_service

def egress_filter(context: NodeContext, opened: OpenRecord) -> str | None:
    """A run with network gets the node's loopback filter, loaded now if it is not yet
    (loopback_filter.py); raises when the kernel refuses, and the record is refused with the reason
    (systemd 252 itself fails a unit whose filter it cannot open: Result `resources`)."""
    if not opened.record.sandbox.network:
        return None
    return loopback_filter.ensure(context.config.name, context.config.url)


async def watch_cpu(context: NodeContext, systemd, opened: OpenRecord, stem: str) -> None:
    """D17 cpu, held from outside the run: its first timer, started before the run so
    that a failure here leaves nothing running unwatched (cpu_watch.py)."""
    cpu = opened.record.budget.cpu
    if cpu:
        config = context.config
        await cpu_watch.arm(systemd, config.python, config.name, opened.hash, stem, cpu, config.cpu_quota)


async def start_session(context: NodeContext, systemd, repository: Repository, record_dir: RecordDir,
                        opened: OpenRecord, page: RunnerPage) -> str:
    """First delivery, then the unit, which prepares its run user and home
    itself; returns the unit's name."""
    record = opened.record
    service = session_service(context.config, context.server_code, opened, page, record_dir,
                              egress_filter(context, opened))
    if not prepared_in_unit(opened):  # D34: the node prepares it, before the start
        prepare_run(preparation(context.config, record_dir, opened, service.name.removesuffix(".service"),
                                homes=page.homes, keep=page.kept()))
    record_dir.deliver(record_delivery(opened.hash, record.objective))  # C3: its first delivery
    # D6: the mark says it started, so a unit found gone later means lost.
    record_dir.mark("started", {"unit": service.name, "at": time.time()})
    await watch_cpu(context, systemd, opened, service.name.removesuffix(".service"))
    await systemd.start(service)
    context.log(f"started {service.name} for {record.user}", record=opened.hash)
    return service.name


async def stop_session(context: NodeContext, systemd, record_dir: RecordDir, by: str, stop_hash: str) -> bool:
    """Stop the run's unit; its end writes `stopped` (D4). False if it was not running."""
    opened, _ = record_dir.load()
    name = unit_name(context.server_code, opened.hash)
    state = await systemd.state(name)
    if state is None or state.active_state not in ("active", "activating", "reloading"):
        return False
    record_dir.mark("stop", {"by": by, "stop": stop_hash})  # read by the stop step
    await systemd.stop(name)
    context.log(f"stopping {name}: stop {stop_hash[:12]} by {by}", record=opened.hash)
    return True
