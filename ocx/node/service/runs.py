"""Starting and stopping runs through systemd (C3, C5, D3, D19)."""
from __future__ import annotations

import time

from ...fossil.repository import Repository
from ...protocol.decide import OpenRecord
from ...protocol.deliveries import record_delivery
from .context import NodeContext
from ..layout import unit_name
from ..records import RecordDir
from .runner_pages import RunnerPage
from ..unit.prepare import prepare_run
from .sessions import preparation, prepared_in_unit, session_service

async def start_session(context: NodeContext, systemd, repository: Repository, record_dir: RecordDir,
                        opened: OpenRecord, page: RunnerPage) -> str:
    """First delivery, then the unit, which prepares its run user and home
    itself; returns the unit's name."""
    record = opened.record
    service = session_service(context.config, context.server_code, opened, page, record_dir)
    if not prepared_in_unit(opened):  # D34: the node prepares it, before the start
        prepare_run(preparation(context.config, record_dir, opened, service.name.removesuffix(".service"),
                                homes=page.homes, keep=page.kept()))
    record_dir.deliver(record_delivery(opened.hash, record.objective))  # C3: its first delivery
    # D6: the mark says it started, so a unit found gone later means lost.
    record_dir.mark("started", {"unit": service.name, "at": time.time()})
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
