"""One pass of the node: tend every record, act on what arrived, tend again (C3, D2, D5, D26).

Triggers only say "look": the repository says what is new, by receipt
(rcvid), after the node's mark. The mark is a shortcut (D2): every action
is safe to repeat, since a record with a directory or a response is never
admitted again, a delivery is dropped into an inbox once, and a response
is written only when the repository holds none. Acting on an arrival only
writes marks (states.py); starting, stopping and answering are the next
step of each record, which tend.py takes on every pass, so a node cut off
anywhere finds it again.

Each artifact is handled on its own (C4; docs/node.md, 'Faults'): one that fails is logged
with its record, and its receipt kept in the mark to be read again on the
next passes, within a bound (states.Failure); the mark moves past it, so
no receipt is read for ever, and none is skipped while it may still pass.
A record given up on is answered, its note naming what failed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from itertools import takewhile
from typing import TYPE_CHECKING, Any

from ..fossil.repository import SETTLE_SECONDS, Repository
from ..node import record_store
from ..node.admit import admission
from ..node.arrivals import KINDS, QUIET_AFTER_SECONDS, RECROSSLINK_SECONDS, ReceiptReader
from ..node.cut import cut_here
from ..node.faults import describe, is_node_fault
from ..node.oversized import refuse_oversized
from ..node.record_dirs import THREAD, TICKET, RecordDir, node_lock, record_dirs
from ..node.states import Failure, Mark, RecordState, acting, record_state
from ..protocol.admission import Inadmissible
from ..protocol.decide import (
    CHANGE,
    POST,
    Action,
    Admit,
    Answered,
    Arrival,
    Deliver,
    Ignore,
    NodeFacts,
    OpenRecord,
    Refuse,
    RunCheckin,
    StopRun,
    decide,
)
from ..protocol.deliveries import record_delivery
from ..protocol.messages import Outcome
from .checkin_runs import enqueue
from .cleanup import remove_leftovers
from .context import NodeContext
from .enforcement import hold_enforcement
from .look_back import look_back, opened_by
from .pass_mark import read_mark, write_mark
from .respond import Target, decide_answer
from .tend import PassReport, Tending, Units

if TYPE_CHECKING:
    from ..fossil.artifacts import Receipt
    from ..systemd.manager import Systemd

__all__ = ["PassReport", "run_pass"]

# A pass that admitted records (or queued check-ins) reads receipts this long, then its tending starts
# them; the next pass goes on at once (serve.py). A burst of 100 took one pass of 3 s to admit
# (docs/node.md, 'Measured').
RECEIPTS_SECONDS, TO_START = 0.25, ("Admit", "RunCheckin")


def facts(context: NodeContext, seen: dict[str, frozenset[Mark]] | None = None) -> NodeFacts:
    """SEEN: each record's own marks as this pass read them, but for the records an action wrote since
    (PassReading.changed): refreshed here, so a burst's pass lists each record's directory once, not
    once for each arrival, which grew with the records open (docs/node.md, 'Measured')."""
    seen = {} if seen is None else seen
    found = record_dirs(context.config)
    now = {r.hash: seen[r.hash] if r.hash in seen else r.present()[0] for r in found}
    seen.clear()
    seen.update(now)
    states = {r: record_state(now[r.hash]) for r in found}
    opened = tuple(r.load()[0] for r, state in states.items() if acting(state))
    # A record whose answer is decided, or written, was acted on already (F3): never admitted again.
    done = frozenset(r.hash for r, state in states.items() if state in (RecordState.ANSWERING, RecordState.ANSWERED))
    return NodeFacts(context.server_code, context.config.node_user, opened, answered=done)


async def run_pass(context: NodeContext, systemd: Systemd) -> PassReport:
    report = PassReport()
    with node_lock(context.config), record_store.one_look():
        remove_leftovers(context.config.state_dir / "records")
        tending = Tending(context, systemd, await Units.read(systemd, context.server_code), report)
        await tending.all()  # ended runs answered, cut-off steps taken again
        acted = len(report.actions)
        with Repository(context.config.repository) as repository:
            await read_receipts(context, systemd, repository, report)
            await hold_enforcement(context, systemd, repository, report)
        if len(report.actions) > acted:  # records just admitted, stopped or given check-ins
            tending.units = await Units.read(systemd, context.server_code)
            await tending.all(only=report.touched)
    report.running = tending.units.active()
    return report


async def read_receipts(context: NodeContext, systemd: Systemd, repository: Repository, report: PassReport) -> None:
    mark, retry = read_mark(context)
    if context.config.elsewhere:  # its clone cannot tell senders: the server's receipts (D37)
        try:
            await read_served_receipts(context, systemd, repository, report, mark, retry)
        except OSError as error:  # cut off from its server (D39): its runs go on
            context.log(f"the server cannot be reached: {describe(error)}", priority=4)
        return
    behind: set[str] = set()  # records opened late whose look back failed: given nothing newer yet (D18)
    until, acted_before = time.monotonic() + RECEIPTS_SECONDS, len(report.actions)
    for rcvid in sorted(retry):  # those that failed before first, in arrival order
        receipt = repository.receipt(rcvid)
        reading = PassReading(ReceiptReader(repository, [receipt]), behind=frozenset(behind)) if receipt else None
        failed = (await handle(context, systemd, repository, receipt, report, reading))[0] if receipt else []
        failed += await _look_back(context, repository, rcvid, mark, report, behind) if receipt else []
        retry = _retried(context, retry, rcvid, receipt, failed, report)
        write_mark(context, mark, retry)
    while True:  # read again before stopping (D26)
        # Only what can be a message or a delivery (arrivals.py); a receipt of nothing else is passed by.
        newest = repository.max_rcvid()
        # What run users sent past the cap, shunned before any pull can carry it (oversized.py): a scan of
        # every blob, so only when there are receipts past the mark (a burst's passes mostly have none).
        if newest > mark:
            refuse_oversized(context.config, repository, mark, newest, context.log)
        receipts = [r for r in repository.receipts_since(mark, kinds=KINDS, untyped_after=time.time()
                                                         - RECROSSLINK_SECONDS) if r.rcvid <= newest]
        # Fossil may still be crosslinking the newest: stop before it; its commit is the next event.
        ready = list(takewhile(repository.settled, receipts))
        # Read after the receipts: a login given admin before it sent a record is an admin here.
        reading = PassReading(ReceiptReader(repository, ready), behind=frozenset(behind))
        for receipt in ready:
            failed, acted = await handle(context, systemd, repository, receipt, report, reading)
            for stored in receipt.artifacts:
                cut_here(context.config.name, "receipt", stored.hash)
            if failed:
                retry = _retried(context, retry, receipt.rcvid, receipt, failed, report)
            if acted or failed:
                write_mark(context, receipt.rcvid, retry)  # a crash after this reads no further back
            report.receipts += 1
            if (time.monotonic() > until and receipt is not ready[-1]
                    and any(a in TO_START for a in report.actions[acted_before:])):  # the rest: next pass
                write_mark(context, receipt.rcvid, retry)
                report.more = True
                return
        # Everything before the first unsettled receipt was handled (or held nothing to handle).
        upto = receipts[len(ready)].rcvid - 1 if len(ready) < len(receipts) else newest
        if upto > mark:
            write_mark(context, upto, retry)  # D2: a shortcut
        if len(ready) < len(receipts):
            held = receipts[len(ready)]  # which artifact, and for how long: what a stall is diagnosed from
            age = time.time() - held.time.timestamp()
            context.log(f"receipt {held.rcvid} is still being crosslinked ({', '.join(repository.unsettled(held))}, "
                        f"received {age:.1f} s ago): waiting", priority=7)
            # Fossil's crosslink is the next event; should none come (its server killed mid-post), the pass
            # once the hold ends takes it as it is, rather than the hold lasting until something else arrives.
            report.retry(SETTLE_SECONDS - age + 1.0)
        if upto == mark or len(ready) < len(receipts):
            break
        mark = upto


async def read_served_receipts(context: NodeContext, systemd: Systemd, repository: Repository, report: PassReport,
                               mark: int, retry: dict[int, dict[str, Any]]) -> None:
    """A node elsewhere's receipts: the server's (node/served.py), each sender with the letters the
    server gives it, acted on once its clone holds their artifacts (D37)."""
    def reader(receipts: list[Receipt], letters: dict[str, frozenset[str]]) -> PassReading:
        return PassReading(ReceiptReader(repository, receipts, lambda login: letters.get(login or "", frozenset())),
                           behind=frozenset(behind))

    behind: set[str] = set()  # as read_receipts'
    for rcvid in sorted(retry):  # those that failed before first, in arrival order
        receipt, letters = context.served.receipt(repository, rcvid)
        failed = (await handle(context, systemd, repository, receipt, report, reader([receipt], letters)))[0] \
            if receipt else []
        failed += await _look_back(context, repository, rcvid, mark, report, behind) if receipt else []
        retry = _retried(context, retry, rcvid, receipt, failed, report)
        write_mark(context, mark, retry)
    while True:  # read again before stopping (D26)
        # Not yet in its clone (the follower's pull is the next event), or crosslinking on the server: wait.
        ready, letters, waiting = context.served.receipts(repository, mark)
        reading, acted_before = reader(ready, letters), len(report.actions)
        for receipt in ready:
            failed, _acted = await handle(context, systemd, repository, receipt, report, reading)
            for stored in receipt.artifacts:
                cut_here(context.config.name, "receipt", stored.hash)
            if failed:
                retry = _retried(context, retry, receipt.rcvid, receipt, failed, report)
            mark = receipt.rcvid
            write_mark(context, mark, retry)
            report.receipts += 1
        if waiting:
            context.log(f"receipts after {mark} are not ready yet: waiting", priority=7)
        if not ready or waiting:
            break
        if any(a in TO_START for a in report.actions[acted_before:]):
            # Read again by the next pass, which begins at once (serve.py), as a local pass leaves the
            # rest of a burst: asked here, the server's node cost a round trip before this pass's
            # second look started what it admitted, and the facts it gave of them this pass were
            # dropped, so the start asked for the runner's page once more.
            report.more = True
            break


async def _look_back(context: NodeContext, repository: Repository, rcvid: int, mark: int, report: PassReport,
                     behind: set[str]) -> list[Failed]:
    """A record that retried receipt RCVID opened hears what the passes read meanwhile (look_back.py).
    If that failed, it joins BEHIND: this pass gives it nothing newer, which the next look back
    reads in order (its mark then past it), so its queue keeps the arrival order (D18)."""
    failed = [Failed(hash_, error) for hash_, error in await look_back(context, repository, rcvid, mark, act, report)]
    if failed:
        behind.update(opened.hash for opened in opened_by(context, rcvid))
    return failed


@dataclass(frozen=True)
class Failed:
    """An artifact, or one action on it, that failed; TARGET when it was a record to answer."""

    artifact: str
    error: BaseException
    target: Target | None = None


def _retried(context: NodeContext, retry: dict[int, dict[str, Any]], rcvid: int, receipt: Receipt | None,
             failed: list[Failed], report: PassReport) -> dict[int, dict[str, Any]]:
    """RETRY after one more try of receipt RCVID: kept while it may pass, else given up, its record answered."""
    retry = dict(retry)
    if not failed:
        retry.pop(rcvid, None)
        return retry
    now, before = time.time(), retry.get(rcvid)
    first = failed[0]
    fault = any(is_node_fault(f.error) for f in failed)
    failure = Failure("receipt", (before["count"] if before else 0) + 1, before["first"] if before else now,
                      describe(first.error), fault, now)
    received = receipt.time.timestamp() if receipt else now
    wall = first.target.wall_seconds if first.target else 0
    if not failure.gives_up(now, received, wall):
        retry[rcvid] = {"count": failure.count, "first": failure.first, "error": failure.error, "fault": fault}
        report.retry(failure.retry_in())
        return retry
    retry.pop(rcvid, None)
    context.log(f"gave up on receipt {rcvid} after {failure.count} tries: {failure.error}", record=first.artifact,
                priority=3)
    for given_up in failed:  # never silent: a record it held is answered, naming what failed
        if given_up.target is not None:
            try:
                decide_answer(context, RecordDir.of(context.config, given_up.target.hash),
                              Outcome.lost if fault else Outcome.refused,
                              f"the node could not act on it: {describe(given_up.error)}", given_up.target)
            except Exception as error:  # one failing answer stops no other given-up record's
                context.log(f"could not keep its answer either: {describe(error)}", record=given_up.target.hash,
                            priority=2)
    return retry


@dataclass
class PassReading:
    """What a pass reads once for every artifact, not once for each: every
    login's letters, and the open records (the record an action wrote read
    again, since it may have opened or closed; the node writes the records'
    own marks, under its lock, so no other record changed meanwhile)."""

    reader: ReceiptReader
    known: NodeFacts | None = None
    behind: frozenset[str] = frozenset()  # open, but not offered anything (read_receipts)
    seen: dict[str, frozenset[Mark]] = field(default_factory=dict)  # each record's own marks (facts)

    def facts(self, context: NodeContext) -> NodeFacts:
        if self.known is None:
            known = facts(context, self.seen)
            self.known = replace(known, open_records=tuple(o for o in known.open_records if o.hash not in self.behind))
        return self.known

    def changed(self, record_hash: str | None) -> None:
        """An action wrote RECORD_HASH's directory (None: it may have written any)."""
        self.known = None
        if record_hash is None:
            self.seen.clear()
        else:
            self.seen.pop(record_hash, None)

    def open_now(self, context: NodeContext) -> list[OpenRecord]:
        """The records open on the node (saved, not answered), as admission asks (admit.py)."""
        self.facts(context)
        root = context.config.state_dir / "records"  # once, not for each record of each admission
        return [RecordDir(root / name).load()[0] for name, own in self.seen.items()
                if Mark.RECORD in own and record_state(own) is not RecordState.ANSWERED]


async def handle(context: NodeContext, systemd: Systemd, repository: Repository, receipt: Receipt, report: PassReport,
                 reading: PassReading | None = None) -> tuple[list[Failed], bool]:
    """Every artifact of RECEIPT, each on its own; what failed, and whether anything was done."""
    reading = reading or PassReading(ReceiptReader(repository, [receipt]))
    failed: list[Failed] = []
    acted = False
    for stored in receipt.artifacts:
        known = reading.facts(context)
        try:
            came = reading.reader.arrival(receipt, stored, known)
            actions = decide(came, known) if came is not None else []
        except Exception as error:  # one unreadable artifact stops nothing else
            context.log(f"cannot read {stored.hash}: {describe(error)}", record=stored.hash, priority=4)
            failed.append(Failed(stored.hash, error))
            continue
        if came is None:
            continue  # neither message nor delivery (arrivals.py)
        for action in actions:
            try:
                await act(context, repository, came, action, report, reading)
            except Exception as error:  # one action's trouble stops no other; counted against the receipt
                target = _target(came, action)
                context.log(f"{type(action).__name__} failed: {describe(error)}",
                            record=target.hash if target else came.hash, priority=4)
                failed.append(Failed(came.hash, error, target))
            if not isinstance(action, Ignore):
                reading.changed(getattr(action, "record_hash", None))
                acted = True
    return failed, acted


def _target(came: Arrival, action: Action) -> Target | None:
    return _record_target(came, action) if isinstance(action, (Admit, Refuse)) else None


def _record_target(came: Arrival, action: Admit | Refuse) -> Target:
    wall = action.record.budget.wall_seconds if isinstance(action, Admit) else 0
    return Target(action.record_hash, _place_kind(came), came.place or "", came.received, wall)


def _place_kind(came: Arrival) -> str:
    return THREAD if came.kind == POST else TICKET


async def act(context: NodeContext, repository: Repository, came: Arrival, action: Action,
              report: PassReport, reading: PassReading | None = None) -> None:
    """What an arrival asks, kept as marks; tend.py takes each record's next step."""
    if isinstance(action, Ignore):
        # An operator can see why a post did nothing; not again for each old one a lost mark reads (D2).
        if came.kind in (POST, CHANGE) and time.time() - came.received < QUIET_AFTER_SECONDS:
            context.log(f"ignored {came.kind} {came.hash[:12]} from {came.sender}: {action.why}", record=came.hash,
                        priority=7)
        return
    report.actions.append(type(action).__name__)
    report.acted_on(getattr(action, "record_hash", None))
    if isinstance(action, Refuse):  # C4 `refused`, naming the first field at fault (D8), once
        target = _target(came, action)
        decide_answer(context, RecordDir.of(context.config, action.record_hash), Outcome.refused, str(action.error),
                      target)
    elif isinstance(action, Admit):
        admit(context, repository, came, action, reading.open_now(context) if reading is not None else None)
    elif isinstance(action, StopRun):
        record_dir = RecordDir.of(context.config, action.record_hash)
        record_dir.mark(Mark.STOP, {"by": action.by, "stop": came.hash})
        context.log(f"stop {came.hash[:12]} by {action.by}", record=action.record_hash)
    elif isinstance(action, Deliver):
        RecordDir.of(context.config, action.record_hash).deliver(action.delivery)
    elif isinstance(action, Answered):  # its answer is in the repository: letters withdrawn next (C4, D31)
        decide_answer(context, RecordDir.of(context.config, action.record_hash), action.outcome,
                      f"answered by {action.by}", by=action.by)
    elif isinstance(action, RunCheckin):
        if enqueue(RecordDir.of(context.config, action.record_hash), action.checkin, action.branch):
            context.log(f"check-in {action.checkin} on {action.branch} queued", record=action.record_hash)


def admit(context: NodeContext, repository: Repository, came: Arrival, action: Admit,
          open_now: list[OpenRecord] | None = None) -> None:
    """Saved if it can run here, else refused; its run is started by tend.py. OPEN_NOW: admission's."""
    record_dir = RecordDir.of(context.config, action.record_hash)
    target = _record_target(came, action)
    if context.served.answer(repository, target.place_kind, action.place, action.record_hash,
                             node=context.server_code, received=came.received,
                             wall_seconds=action.record.budget.wall_seconds):
        return  # F3: a record that has its response is never acted on again
    try:
        admission(repository, context.config, action.record_hash, action.record, open_now, served=context.served)
    except Inadmissible as refusal:
        decide_answer(context, record_dir, Outcome.refused, str(refusal), target)
        return
    opened = OpenRecord(action.record_hash, action.record, action.place, came.received, came.rcvid)
    first = None if action.record.is_command else record_delivery(opened.hash, action.record.objective)
    record_dir.save(opened, target.place_kind, first)  # C3: a session's first delivery is its record
    context.log("command record open: waiting for its first check-in" if action.record.is_command
                else "admitted", record=opened.hash)
