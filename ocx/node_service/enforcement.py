"""Enforcement held over a run's whole life, for every kind of record (C5, C6, D24).

On each pass, for every open record whose run user holds the letters this
record gave it, set (node/letters.py), sessions and `command` records alike:

- its run user given admin or setup, or any letter beyond its run's: the
  run can write past every restriction, and a command record's next
  check-in would run as that user: the record is marked `unenforced`,
  whether a run of it is live or not (a session's is judged only while its
  unit lives: once ended, its own end is its answer);
- a socket-served run (no_password, or no network) whose tool socket is gone
  (socket_served.py) while its program runs (a session's unit, or a command
  record's check-in run): it cannot write at all as promised.

The mark is all: tend.py and checkin_runs.py end what runs and answer
`unenforced` once, as for a stop. The preparation of every later run checks
the letters again and never resets them (node/letters.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..fossil.repository import Repository
from ..node.faults import describe
from ..node.letters import enforcement_lost, letters_set
from ..node.record_dirs import RecordDir, acting_records
from ..node.run_layout import unit_name, unit_stem
from ..node.socket_served import served_by_socket, socket_accepts, tool_socket_path, tools_lost
from ..node.states import Mark, RecordState, RunState
from ..protocol.decide import OpenRecord
from .checkin_runs import queued
from .context import NodeContext
from .tend import PassReport

if TYPE_CHECKING:
    from ..systemd.manager import Systemd

_RUNNING = (RunState.STARTING, RunState.STARTED, RunState.PREPARED)


async def hold_enforcement(context: NodeContext, systemd: Systemd, repository: Repository, report: PassReport) -> None:
    """D24: every open record whose run the node can no longer hold as promised is marked `unenforced`."""
    records: list[tuple[RecordDir, OpenRecord]] = []
    for record_dir in acting_records(context.config):
        try:
            if record_dir.state is RecordState.OPEN:
                records.append((record_dir, record_dir.load()[0]))
        except Exception as error:  # one record's trouble stops no other; the next pass looks again
            context.log(f"enforcement check failed: {describe(error)}", record=record_dir.hash, priority=4)
    if not records:
        return
    # Whether each record's letters were set, read BEFORE the letters themselves: a preparation that
    # sets them between the two reads would otherwise have its new login's default-perms (`u`, the
    # instant before its letters) judged as letters given beyond its run's, and its run ended.
    given = {record_dir.hash: letters_set(record_dir.path) for record_dir, _ in records}
    try:  # one read of the user table (or one answer of the server's node, D37) a pass
        letters, admins = context.served.letters_now(repository, [opened.record.user for _, opened in records])
    except Exception as error:  # the server's node cut off (D39): the next pass looks again
        context.log(f"enforcement check failed: {describe(error)}", priority=4)
        return
    for record_dir, opened in records:
        try:
            why = await _lost(context, systemd, record_dir, opened, letters, admins, given[record_dir.hash])
            if why is None:
                continue
            record_dir.mark(Mark.UNENFORCED, {"why": why})  # tend.py ends the run, then answers
            report.actions.append("unenforced")
            report.acted_on(record_dir.hash)
            context.log(f"unenforced: {why}", record=opened.hash, priority=4)
        except Exception as error:  # one record's trouble stops no other; the next pass looks again
            context.log(f"enforcement check failed: {describe(error)}", record=record_dir.hash, priority=4)


async def _lost(context: NodeContext, systemd: Systemd, record_dir: RecordDir, opened: OpenRecord,
                letters: dict[str, str | None], admins: frozenset[str], given: bool) -> str | None:
    user = opened.record.user
    if not opened.record.is_command and not record_dir.run_marks(unit_stem(context.server_code, opened.hash)):
        # A session whose start the node never asked (its STARTING mark is written first, start_stop.py): no unit
        # of it lives, so nothing is judged, as systemd would have said (a burst's pass asked it of each waiting).
        return None
    by_letters = enforcement_lost(user, letters.get(user), user in admins, given)
    # The repository first (one query a pass) and the socket (one connect); systemd only when one fails.
    no_socket = served_by_socket(opened) and not socket_accepts(tool_socket_path(record_dir))
    if by_letters is None and not no_socket:
        return None
    if opened.record.is_command:
        if by_letters is not None:
            return by_letters  # its next check-in would run as that user, whether one runs now or not
        return await tools_lost(context.config.name, systemd, record_dir) if await _checkin_runs(
            context, systemd, record_dir, opened) else None
    active = await systemd.active_state(unit_name(context.server_code, opened.hash))
    # Ended: its own end is its answer. A socket is judged only once the program runs.
    live = ("active", "activating", "reloading") if by_letters else ("active", "reloading")
    if active is None or active not in live:
        return None
    return by_letters or await tools_lost(context.config.name, systemd, record_dir)


async def _checkin_runs(context: NodeContext, systemd: Systemd, record_dir: RecordDir, opened: OpenRecord) -> bool:
    """Whether a check-in run of the command record's program runs now (one at a time, D18)."""
    for checkin in queued(record_dir):
        stem = unit_stem(context.server_code, opened.hash, checkin)
        if record_dir.run_state(stem) in _RUNNING:
            return await systemd.active_state(f"{stem}.service") in ("active", "reloading")
    return False
