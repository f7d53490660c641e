"""Starting and stopping runs through systemd (C3, C5, D3, D5, D19).

A start is three marks (states.py): STARTING before systemd is asked, so a
node cut off before or while asking finds, on its next pass, a run that
never reached systemd and asks again (D5: asking twice is harmless, the
unit's name is the run); STARTED once systemd took it. What happens in
between (the preparation, the end) the unit's own steps mark.
"""
from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..fossil.errors import FOSSIL_FAILURES
from ..node import spare, template
from ..node.config import NodeConfig
from ..node.cut import cut_here
from ..node.faults import describe
from ..node.letters import LettersFound
from ..node.record_dirs import RecordDir
from ..node.run_layout import RunHome, unit_name, unit_stem
from ..node.runner_pages import RunnerPage
from ..node.states import Mark
from ..protocol.decide import OpenRecord
from ..run_steps import cpu_watch
from ..run_steps.prepare import prepare_run
from ..systemd import loopback_filter
from ..systemd.units import TransientService
from .context import NodeContext
from .run_units import preparation, prepared_in_unit, session_service

if TYPE_CHECKING:
    from ..systemd.manager import Systemd


def egress_filter(context: NodeContext, opened: OpenRecord) -> str | None:
    """A run with network gets the node's loopback filter, loaded now if it is not yet
    (loopback_filter.py); raises when the kernel refuses, and the record is refused with the reason
    (systemd 252 itself fails a unit whose filter it cannot open: Result `resources`)."""
    if not opened.record.sandbox.network:
        return None
    return loopback_filter.ensure(context.config.name, context.config.url)


async def watch_cpu(context: NodeContext, systemd: Systemd, opened: OpenRecord, stem: str) -> None:
    """D17 cpu, held from outside the run: its first timer, started before the run so
    that a failure here leaves nothing running unwatched (cpu_watch.py). A start asked
    again (D5) of a unit that already runs was watched from its first start."""
    cpu = opened.record.budget.cpu
    if not cpu:
        return
    if await systemd.active_state(f"{stem}.service") in ("active", "activating", "reloading"):
        return
    config = context.config
    await cpu_watch.arm(systemd, config.python, config.name, opened.hash, stem, cpu, config.cpu_quota)


async def start_unit(context: NodeContext, systemd: Systemd, record_dir: RecordDir, opened: OpenRecord,
                     service: TransientService, checkin: str | None = None, homes: list[str] | None = None,
                     keep: tuple[tuple[int, str], ...] = (), pull: bool = False) -> None:
    """STARTING, the node's own preparation where the run has no network (D34), the unit, STARTED.
    PULL: run_units.preparation's."""
    stem = service.name.removesuffix(".service")
    record_dir.mark(Mark.STARTING, {"unit": service.name, "at": time.time()}, stem)
    cut_here(context.config.name, "starting", opened.hash)
    if not prepared_in_unit(opened):  # D34: the node prepares it, before the start
        try:
            prepare_run(preparation(context.config, record_dir, opened, stem, checkin, homes=homes, keep=keep,
                                    pull=pull))
        except LettersFound as found:  # kept as the unit's preparation keeps it: the tending answers (letters.py)
            record_dir.mark(Mark.UNPREPARED, {"at": time.time(), "why": describe(found), "fault": False,
                                              **found.mark()}, stem)
            return
    await watch_cpu(context, systemd, opened, stem)
    cut_here(context.config.name, "watched", opened.hash)  # its timer waits: asked again, it is replaced
    started = await systemd.start_once(service)
    cut_here(context.config.name, "started", opened.hash)
    record_dir.mark(Mark.STARTED, {"unit": service.name, "at": time.time()}, stem)
    what = f"check-in {checkin}" if checkin else opened.record.user
    context.log(f"started {service.name} for {what}" + ("" if started else " (it was already running)"),
                record=opened.hash)


async def start_session(context: NodeContext, systemd: Systemd, record_dir: RecordDir, opened: OpenRecord,
                        page: RunnerPage) -> str:
    """The session's unit, which prepares its run user and home itself; returns the unit's name."""
    # The runs' clone holds what came before the record, pulled first if it lacks any of it (template.py),
    # judged by the node's own repository's receipts: never opened.rcvid, the server's on a node elsewhere.
    pull = template.ensure_before(context.config, opened.hash, log=context.log)
    # The home the node made ahead from that clone, when there is one, is put in place before the unit
    # exists (spare.py); only where no earlier attempt left a home, and only for a run prepared in its unit.
    home = RunHome(unit_stem(context.server_code, opened.hash)).on_host
    ahead = take_spare(context, home) if not pull and prepared_in_unit(opened) else None
    service = session_service(context.config, context.server_code, opened, page, record_dir,
                              egress_filter(context, opened), pull, ahead)
    await start_unit(context, systemd, record_dir, opened, service, homes=page.homes, keep=page.kept(), pull=pull)
    return service.name


def take_spare(context: NodeContext, home: Path) -> int | None:
    """A home made ahead put in a session's place (spare.py), made from the runs' clone as it is or
    from an earlier version whose checkout is still the tip; the mark it was made from, or None."""
    try:
        clone, lineage, upto, since = spare_bounds(context.config)
    except FOSSIL_FAILURES:  # the runs' clone unreadable, say: the preparation makes the home itself
        return None
    return spare.take(clone, home, lineage=lineage, upto=upto, since=since)


def spare_bounds(config: NodeConfig) -> tuple[Path, str, int, int]:
    """What a home made ahead is matched by (spare.py), for the node's making and a session's taking
    alike: the runs' clone, its lineage, its mark, and the newest receipt that moved a tip up to it."""
    clone = template.template_path(config)
    upto = template.held(clone)
    return (clone, lineage_of(str(clone), os.stat(clone).st_ino), upto,
            tip_changed(config.repository, os.stat(config.repository).st_ino, upto))


# Read once for each file, not for each run of a burst. INODE: a pull keeps the runs' clone's file and
# its lineage (it pulls in place), a clone made again is a new file (copies.make_template renames it into
# place), and a repository adopted again numbers its receipts anew.
@functools.lru_cache(maxsize=4)
def lineage_of(clone: str, inode: int) -> str:
    return template.lineage(Path(clone))


@functools.lru_cache(maxsize=4)
def tip_changed(repository: str, inode: int, upto: int) -> int:
    """Repository.newest_tip_change: receipts up to UPTO never change."""
    from ..fossil.repository import Repository

    with Repository(repository) as opened:
        return opened.newest_tip_change(upto)


async def stop_session(context: NodeContext, systemd: Systemd, record_dir: RecordDir, opened: OpenRecord) -> None:
    """Ask systemd to stop the run's unit; its end is answered from its stop step's record (D4)."""
    name = unit_name(context.server_code, opened.hash)
    await systemd.stop(name)
    context.log(f"stopping {name}", record=opened.hash)
