"""One pass of the node: answer ended runs, then act on what arrived (C3, D2, D5, D26).

Triggers only say "look": the repository says what is new, by receipt
(rcvid), after the node's mark. The mark is a shortcut (D2): every action
is safe to repeat, since a record with a saved directory or a response is
never started again, a delivery is dropped into an inbox once, and a
response is written only when the repository holds none.
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from itertools import takewhile

from ...fossil.repository import Repository
from ...protocol import decide as d
from ...protocol.errors import FieldError
from ...protocol.messages import Outcome
from .admit import admission
from .arrivals import answer_in_place, arrival
from .context import NodeContext
from .finish import answer_ended_runs
from ..records import THREAD, TICKET, RecordDir, node_lock, open_records, write_atomically
from .respond import Target, respond, withdraw
from ..layout import unit_name
from .command_runs import enqueue, stop_command_runs, tend
from .runs import start_session, stop_session
from .tool_sockets import served_by_socket, socket_accepts, socket_path, tools_lost


@dataclass
class PassReport:
    receipts: int = 0
    actions: list[str] = field(default_factory=list)


def _mark_file(context: NodeContext):
    return context.config.state_dir / "mark.json"


def read_mark(context: NodeContext) -> int:
    try:
        return int(json.loads(_mark_file(context).read_text())["rcvid"])
    except (FileNotFoundError, ValueError, KeyError):
        return 0  # D2: lost, so read again from the start


def write_mark(context: NodeContext, rcvid: int) -> None:
    write_atomically(_mark_file(context), json.dumps({"rcvid": rcvid}) + "\n")


def facts(context: NodeContext) -> d.NodeFacts:
    opened = tuple(r.load()[0] for r in open_records(context.config))
    return d.NodeFacts(context.server_code, context.config.node_user, opened)


async def run_pass(context: NodeContext, systemd) -> PassReport:
    report = PassReport()
    with node_lock(context.config):
        answer_ended_runs(context)
        await tend(context, systemd)  # D18: the ended check-in run judged, the next one started
        with Repository(context.config.repository) as repository:
            mark = read_mark(context)
            while True:  # read again before stopping (D26)
                receipts = repository.receipts_since(mark)
                # Fossil may still be crosslinking the newest: stop before it; its commit is the next event.
                ready = list(takewhile(lambda receipt: settled(repository, receipt), receipts))
                for receipt in ready:
                    await handle(context, systemd, repository, receipt, report)
                    mark = receipt.rcvid
                    write_mark(context, mark)
                    report.receipts += 1
                if len(ready) < len(receipts):
                    context.log(f"receipt {receipts[len(ready)].rcvid} is still being crosslinked: waiting", priority=7)
                if not ready or len(ready) < len(receipts):
                    break
            await hold_enforcement(context, systemd, repository)
        await tend(context, systemd)  # check-ins that just arrived
    return report


async def handle(context: NodeContext, systemd, repository: Repository, receipt, report: PassReport) -> None:
    for stored in receipt.artifacts:
        try:
            came = arrival(repository, receipt, stored)
        except Exception as error:  # one unreadable artifact stops nothing else
            context.log(f"cannot read {stored.hash}: {error}", priority=4)
            continue
        for action in d.decide(came, facts(context)):
            await act(context, systemd, repository, came, action, report)


async def hold_enforcement(context: NodeContext, systemd, repository: Repository) -> None:
    """D24: a run whose user was given admin or setup can write past every
    restriction, and a socket-served run whose tool socket is gone cannot
    write at all as promised: end it, and answer `unenforced`."""
    admins = None
    for record_dir in open_records(context.config):
        opened, _ = record_dir.load()
        if opened.record.is_command or record_dir.marked("unenforced"):
            continue
        # The repository first (one query a pass) and the socket (one connect); systemd only when one fails.
        admins = repository.admins() if admins is None else admins
        admin = opened.record.user in admins
        if not admin and not (served_by_socket(opened) and not socket_accepts(socket_path(record_dir))):
            continue
        name = unit_name(context.server_code, opened.hash)
        state = await systemd.state(name)
        # Ended: its own end is its answer. A socket is judged only once the program runs.
        live = ("active", "activating", "reloading") if admin else ("active", "reloading")
        if state is None or state.active_state not in live:
            continue
        why = (f"run user {opened.record.user} was given admin or setup" if admin
               else await tools_lost(context.config.name, systemd, record_dir))
        if why is None:
            continue
        record_dir.mark("unenforced", {"why": why})
        await systemd.stop(name)
        context.log(f"unenforced: {why}", record=opened.hash, priority=4)


SETTLE_SECONDS = 60.0  # past this, an artifact without its event row is taken as it is


def settled(repository: Repository, receipt) -> bool:
    """Whether Fossil has finished crosslinking what this receipt stored."""
    if time.time() - receipt.time.timestamp() > SETTLE_SECONDS:
        return True
    return not any(repository.awaiting_crosslink(stored.hash) for stored in receipt.artifacts
                   if stored.event_type is None)


def _place_kind(came: d.Arrival) -> str:
    return THREAD if came.kind == d.POST else TICKET


async def act(context: NodeContext, systemd, repository: Repository, came: d.Arrival, action: d.Action,
              report: PassReport) -> None:
    if isinstance(action, d.Ignore):
        if came.kind in (d.POST, d.CHANGE):  # an operator can see why a post did nothing
            context.log(f"ignored {came.kind} {came.hash[:12]} from {came.sender}: {action.why}", record=came.hash,
                        priority=7)
        return
    report.actions.append(type(action).__name__)
    if isinstance(action, d.Refuse):
        await refuse(context, repository, came, action.record_hash, action.error)
    elif isinstance(action, d.Admit):
        await admit(context, systemd, repository, came, action)
    elif isinstance(action, d.StopRun):
        await stop(context, systemd, action, came.hash)
    elif isinstance(action, d.Deliver):
        RecordDir.of(context.config, action.record_hash).deliver(action.delivery)
    elif isinstance(action, d.Answered):
        record_dir = RecordDir.of(context.config, action.record_hash)
        if not record_dir.answered:
            opened, _ = record_dir.load()
            withdraw(context, record_dir, opened.record.user)
            record_dir.mark("answered", {"outcome": action.outcome.value, "by": action.by})
            shutil.rmtree(record_dir.inbox, ignore_errors=True)  # D13: no delivery kept for a closed record
    elif isinstance(action, d.RunCheckin):
        if enqueue(RecordDir.of(context.config, action.record_hash), action.checkin, action.branch):
            context.log(f"check-in {action.checkin} on {action.branch} queued", record=action.record_hash)


async def refuse(context: NodeContext, repository: Repository, came: d.Arrival, record_hash: str,
                 error: FieldError, record_dir: RecordDir | None = None) -> None:
    """C4 `refused`, naming the first field at fault (D8), once."""
    wall = record_dir.load()[0].record.budget.wall_seconds if record_dir else 0
    target = Target(record_hash, _place_kind(came), came.place or "", came.received, wall)
    respond(context, target, Outcome.refused, str(error), record_dir)


async def admit(context: NodeContext, systemd, repository: Repository, came: d.Arrival, action: d.Admit) -> None:
    if answer_in_place(repository, _place_kind(came), action.place, action.record_hash, node=context.server_code,
                       node_user=context.config.node_user, received=came.received,
                       wall_seconds=action.record.budget.wall_seconds):
        return  # F3: a record that has its response is never acted on again
    error, page = admission(repository, context.config, action.record_hash, action.record)
    if error is not None:
        await refuse(context, repository, came, action.record_hash, error)
        return
    opened = d.OpenRecord(action.record_hash, action.record, action.place, came.received, came.rcvid)
    record_dir = RecordDir.of(context.config, action.record_hash)
    record_dir.save(opened, _place_kind(came))
    if action.record.is_command:
        context.log("command record open: waiting for its first check-in", record=opened.hash)
        return
    try:
        await start_session(context, systemd, repository, record_dir, opened, page)
    except Exception as failure:  # nothing runs: answer it rather than leave it open
        context.log(f"could not start: {failure}", record=opened.hash, priority=3)
        respond(context, Target.of(record_dir), Outcome.refused, f"the node could not start it: {failure}", record_dir)


async def stop(context: NodeContext, systemd, action: d.StopRun, stop_hash: str) -> None:
    record_dir = RecordDir.of(context.config, action.record_hash)
    opened, _ = record_dir.load()
    if opened.record.is_command:
        record_dir.mark("stop", {"by": action.by, "stop": stop_hash})  # no later check-in runs
        await stop_command_runs(context, systemd, record_dir, opened)
    if opened.record.is_command or not await stop_session(context, systemd, record_dir, action.by, stop_hash):
        # Nothing runs that could answer it at its end: answer now (C3).
        respond(context, Target.of(record_dir), Outcome.stopped, f"stopped by {action.by} (stop {stop_hash})", record_dir)
