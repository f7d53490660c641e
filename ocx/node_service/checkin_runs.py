"""`command` records: each check-in on their branches, run once, then judged (C2, D3, D17, D18, V1).

A command record stays open until stopped. Each check-in that reaches it
(decide's RunCheckin) joins its queue, a file per check-in numbered in
arrival order, so the order survives restarts. One runs at a time (D18): its
own unit `ocx-N-R-C.service`, a fresh clone and a checkout of exactly that
check-in, the record's sandbox and, for each run, its budget. When the unit
has ended (its stop step wrote `ended-STEM.json`), the node starts the next
check-in first, then adds the `ci` verdict on the one that ended, as the node
user, against the record's full hash.

Every step is a run's mark (states.py), so a pass repeated after a crash
does nothing twice: `starting-`/`started-STEM` (its unit was asked for,
then taken), `ended-STEM` (the stop step), `judging-STEM` (its verdict
decided: a pass cut off while writing it looks in the repository and the
node's clone before writing again), `verdict-STEM` (the tag is in the
repository). A run whose unit vanished without an end runs again; one
whose home could not be made for a fault of the node's own, too, within
a bound (states.Failure).
"""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..files import write_atomically
from ..fossil.errors import FOSSIL_FAILURES, UnknownArtifact
from ..fossil.repository import Repository
from ..node import bounded, spare, template
from ..node.cut import cut_here
from ..node.record_dirs import RecordDir
from ..node.run_end import (
    decide_outcome,
    end_facts,
    end_from_systemd,
    ended_before_this_boot,
    keep,
    letters_found,
    never_started,
)
from ..node.run_layout import RunHome, unit_stem
from ..node.states import Mark, RecordState, RunState, ending
from ..protocol.decide import OpenRecord
from ..protocol.messages import Outcome
from ..protocol.verdict import Judgement, VerdictTag, format_verdict
from ..systemd.errors import BusError
from .context import NodeContext
from .run_units import LAST_LINE, command_service, prepared_in_unit
from .start_stop import egress_filter, start_unit

if TYPE_CHECKING:
    from .tend import Tending


def queue_dir(record_dir: RecordDir) -> Path:
    return record_dir.path / "checkins"


def enqueue(record_dir: RecordDir, checkin: str, branch: str) -> bool:
    """Add CHECKIN to the end of the record's queue once; False if it was there already.

    The node handles receipts in order, and a receipt's artifacts in the order
    Fossil stored them (rid), so the queue's numbering is the arrival order
    (D18), also among the check-ins of one push."""
    queue = queue_dir(record_dir)
    queue.mkdir(exist_ok=True)
    names = [p.name for p in queue.glob("*.json")]
    if any(name.endswith(f"-{checkin}.json") for name in names):
        return False
    sequence = 1 + max((int(name.split("-", 1)[0]) for name in names), default=0)
    write_atomically(queue / f"{sequence:08d}-{checkin}.json",
                     json.dumps({"checkin": checkin, "branch": branch}) + "\n")
    return True


def queued(record_dir: RecordDir) -> list[str]:
    """The record's check-ins in arrival order."""
    queue = queue_dir(record_dir)
    if not queue.is_dir():
        return []
    return [json.loads(p.read_text())["checkin"] for p in sorted(queue.glob("*.json"))]


def verdict_for(context: NodeContext, record_dir: RecordDir, opened: OpenRecord, ended: dict[str, Any],
                home: RunHome) -> tuple[Judgement, str] | None:
    """`pass` on exit 0, else `fail`; the reason its last line, or the limit it hit (D17)."""
    facts = end_facts(ended, record_dir, opened.record.budget.cpu)
    decided = decide_outcome(facts, opened.record.budget)
    if decided is None or decided[0] is Outcome.stopped:
        return None  # a shutdown or a stop: the check-in was not judged
    outcome, note = decided
    # The run's own file, shaped as it likes (a link to a secret, a FIFO, a
    # huge or many-line file): read only as D41 allows, one clean line (docs/security.md, 'Class 2').
    last = bounded.read_last_line(home.on_host / LAST_LINE)
    if outcome is Outcome.budget:
        return Judgement.failed, f"budget: {note}"
    if outcome in (Outcome.refused, Outcome.lost):
        return Judgement.failed, f"not run: {note}"
    passed = facts.code == "exited" and facts.status == "0"
    return (Judgement.passed if passed else Judgement.failed), last or note


async def tend_record(tending: Tending, record_dir: RecordDir, opened: OpenRecord, state: RecordState) -> None:
    """Judge each ended check-in run and start the record's next (D18); or, once stopped, end it."""
    if ending(state):
        await _stop(tending, record_dir, opened)
        return
    code, units = tending.context.server_code, tending.units
    unjudged = []
    for checkin in queued(record_dir):
        stem = unit_stem(code, opened.hash, checkin)
        run = record_dir.run_state(stem)
        if run is RunState.JUDGED:
            continue
        found = letters_found(record_dir, stem)
        if found is not None:  # refused (D40) or unenforced (D24): no later check-in runs (node/letters.py)
            tending.letters_changed(record_dir, state, found)
            return
        if run in (RunState.ENDED, RunState.JUDGING):
            if run is RunState.ENDED and cut_off(record_dir.marked(Mark.ENDED, stem) or {}, record_dir):
                # D18: a host shutdown ended it, unjudged: it runs again once the host is back, before any later one.
                if ended_before_this_boot(record_dir.marked(Mark.ENDED, stem) or {}):
                    record_dir.reset(stem)
                    await start_checkin(tending, record_dir, opened, checkin)
                break  # else the host is going down now: the first pass after it is back runs it
            if run is RunState.ENDED and await _again_after_fault(tending, record_dir, opened, checkin, stem):
                break
            unjudged.append((checkin, stem))  # judged once the next one is on its way
            continue
        if run is RunState.NONE:
            await start_checkin(tending, record_dir, opened, checkin)
            break
        if units.live(f"{stem}.service"):
            break  # D18: it still runs
        if units.held(f"{stem}.service") is not None and await end_from_systemd(tending.systemd, record_dir, stem):
            unjudged.append((checkin, stem))
            continue
        # Its unit vanished without an end (the host went down), or never reached systemd: it runs again.
        record_dir.reset(stem)
        await start_checkin(tending, record_dir, opened, checkin)
        break
    for checkin, stem in unjudged:
        judge(tending, record_dir, opened, checkin, stem)
        if record_dir.run_state(stem) is RunState.JUDGED and units.held(f"{stem}.service") is not None:
            try:  # a failed run's unit is kept until judged (KEPT_WHEN_FAILED); judged, it is forgotten
                await tending.systemd.reset_failed(f"{stem}.service")
            except BusError:  # gone already, or systemd busy: it forgets the unit itself
                pass


def cut_off(ended: dict[str, Any], record_dir: RecordDir) -> bool:
    """Whether a check-in's run was ended by a host shutdown, not by itself, a limit or a stop (D4, D18)."""
    return end_facts(ended, record_dir).cut_off


async def _again_after_fault(tending: Tending, record_dir: RecordDir, opened: OpenRecord, checkin: str,
                             stem: str) -> bool:
    """Its home could not be made for a fault of the node's own: it runs again, within a bound."""
    failed = record_dir.marked(Mark.UNPREPARED, stem)
    if not failed or not failed.get("fault") or record_dir.marked(Mark.PREPARED, stem) is not None:
        return False
    step, now = f"prepare-{stem}", time.time()
    failure = record_dir.failures().get(step)
    ended = record_dir.marked(Mark.ENDED, stem) or {}
    if failure is None or failure.last < ended.get("at", 0):  # this end not counted yet
        failure = tending.failed_as(record_dir, step, failed.get("why", "?"), True, now,
                                    opened.record.budget.wall_seconds)
    if failure.gives_up(now, failure.first, opened.record.budget.wall_seconds):
        return False  # judged `fail: not run`
    if failure.due(now):
        record_dir.reset(stem)
        await start_checkin(tending, record_dir, opened, checkin)
    else:
        tending.report.retry(failure.wait(now))
    return True


async def start_checkin(tending: Tending, record_dir: RecordDir, opened: OpenRecord, checkin: str) -> None:
    context = tending.context
    stem = unit_stem(context.server_code, opened.hash, checkin)
    step = f"start-{stem}"
    if tending.waiting(record_dir, step):
        return
    # The runs' clone must hold the check-in, one pull for a whole push of them (template.py). A run
    # prepared in its unit starts first and its preparation waits for the pull (docs/node.md,
    # 'A check-in run starts before its pull': the unit's
    # start and the preparation's own start take as long); the node prepares one without network
    # itself (D34), so it pulls first.
    pull, wait_for = False, None
    try:
        with Repository(context.config.repository) as repository:
            received = repository.sender(checkin).rcvid or 0
        if prepared_in_unit(opened) and template.lacks(template.current(context.config, -1), received):
            wait_for = received
        else:
            pull = template.ensure(context.config, received, log=context.log)
    except FOSSIL_FAILURES as trouble:  # its preparation then pulls it, or says what is missing
        context.log(f"runs' clone: {trouble}", record=opened.hash, priority=4)
        pull = True
    # The pull begins beside placing the home and starting the unit, in a thread: its preparation
    # waits for the pull's mark, and the pull is the longest step on the run's way (~140 ms on click).
    pulling = (asyncio.ensure_future(asyncio.to_thread(pull_for_waiting, context, opened, wait_for))
               if wait_for is not None else None)
    try:
        ahead = place_ahead(context, stem) if not pull and prepared_in_unit(opened) else None
        service = command_service(context, opened, record_dir, checkin, egress_filter(context, opened), pull, ahead,
                                  wait_for)
        await start_unit(context, tending.systemd, record_dir, opened, service, checkin=checkin, pull=pull)
        found = letters_found(record_dir, stem)
        if found is not None:  # the node's own preparation (D34) found them: no unit will poke it
            tending.letters_changed(record_dir, record_dir.state, found)
            return
    except Exception as error:  # a run's start, counted: tried again, then judged `fail: not run` (C4)
        failure = tending.failed(record_dir, step, error, time.time(), opened.record.budget.wall_seconds)
        if failure.gives_up(time.time(), failure.first, opened.record.budget.wall_seconds):
            # judged `fail: not run`, and the queue goes on
            if record_dir.run_state(stem) is RunState.NONE:
                record_dir.mark(Mark.STARTING, {"unit": f"{stem}.service", "at": time.time()}, stem)
            record_dir.mark(Mark.UNPREPARED, {"why": failure.error, "fault": failure.fault}, stem)
            keep(record_dir, stem, never_started(stem))
        return
    finally:
        if pulling is not None:  # never left running past this start: one pull at a time (template.py)
            await pulling
    tending.succeeded(record_dir, step)
    tending.report.actions.append("started")


def pull_for_waiting(context: NodeContext, opened: OpenRecord, received: int) -> None:
    """The pull a started run's preparation waits for; failed, the preparation pulls itself once
    its wait is over (run_steps/prepare.py), so this only logs."""
    try:
        template.ensure(context.config, received, log=context.log)
    except FOSSIL_FAILURES as trouble:
        context.log(f"runs' clone: {trouble}; the run's preparation pulls itself", record=opened.hash, priority=4)


def place_ahead(context: NodeContext, stem: str) -> int | None:
    """A home the node made ahead from a version of the runs' clone, put in this check-in run's place
    (spare.py): its preparation copies the pulled clone over it and moves the checkout. The mark it
    was made from, or None."""
    clone = template.template_path(context.config)
    try:
        lineage = template.lineage(clone)
    except FOSSIL_FAILURES:  # the runs' clone unreadable: the preparation makes the home itself
        return None
    return spare.take(clone, RunHome(stem).on_host, lineage=lineage, upto=template.held(clone))


def judge(tending: Tending, record_dir: RecordDir, opened: OpenRecord, checkin: str, stem: str) -> None:
    """The `ci` verdict of one ended run, as the node user, once (V1, D20)."""
    context, step = tending.context, f"judge-{stem}"
    if tending.waiting(record_dir, step):
        return
    home = RunHome(stem)
    decided = record_dir.marked(Mark.JUDGING, stem)
    if decided is None:
        verdict = verdict_for(context, record_dir, opened, record_dir.marked(Mark.ENDED, stem) or {}, home)
        value = format_verdict(verdict[0], verdict[1][:500], opened.hash) if verdict else None
        if value is not None:
            record_dir.mark(Mark.JUDGING, {"value": value}, stem)
            cut_here(context.config.name, "judging", opened.hash)
    else:
        value = decided["value"]
    tag = None
    if value is not None:
        try:
            tag = write_verdict(context, checkin, value, again=decided is not None)
        except Exception as error:  # e.g. the server is down: the next pass tries again
            failure = tending.failed(record_dir, step, error, time.time(), 0)
            if failure.fault or not failure.gives_up(time.time(), failure.first, 0):
                return
            context.log(f"no verdict on {checkin[:12]}: {failure.error}", record=opened.hash, priority=3)
        else:
            context.log(f"ci {value} on {checkin}", record=opened.hash)
            cut_here(context.config.name, "tagged", opened.hash)
    record_dir.mark(Mark.VERDICT, {"value": value, "tag": tag}, stem)
    tending.succeeded(record_dir, step)
    try:
        bounded.remove_tree(home.inside)  # the link systemd makes to it (removed, never followed)
        bounded.remove_tree(home.on_host)  # a fresh checkout for every run (D16), whatever the run made of it (D41)
    except OSError as error:
        context.log(f"could not remove {home.on_host}: {error}", record=opened.hash, priority=4)


def write_verdict(context: NodeContext, checkin: str, value: str, again: bool) -> str:
    """Tag CHECKIN as the node user. AGAIN: a pass before was cut off after deciding
    it, so it may be in the repository already, or written in the node's clone and not sent."""
    clone = context.node_clone()
    if again:
        node_user = context.config.node_user
        with Repository(context.config.repository) as repository:
            for tag in repository.tag_history(checkin, [VerdictTag.ci.value]):
                if tag.op == "+" and tag.value == value and tag.sender.login == node_user:
                    return tag.artifact
        with Repository(clone.path) as local:
            try:
                written = local.tag_history(checkin, [VerdictTag.ci.value])
            except UnknownArtifact:
                # The clone is behind: it has not pulled the check-in yet, so it holds no tag of it
                # either (it pulls before it tags). Seen when a pass was cut off before tagging.
                written = []
            for tag in written:
                if tag.op == "+" and tag.value == value:
                    clone.push()
                    return tag.artifact
    return clone.tag(checkin, VerdictTag.ci.value, value)


async def _stop(tending: Tending, record_dir: RecordDir, opened: OpenRecord) -> None:
    """A stop ends the check-in run in progress, then the record is answered (C2, C4); no later one runs."""
    code, units = tending.context.server_code, tending.units
    running = [u for u in units.of_record(code, opened.hash) if units.live(u.name)
               and record_dir.run_state(u.name.removesuffix(".service"))
               not in (RunState.ENDED, RunState.JUDGING, RunState.JUDGED)]
    for unit in running:
        if unit.job == "stop" or unit.active_state == "deactivating":
            continue
        try:
            await tending.systemd.stop(unit.name)
            tending.context.log(f"stopping {unit.name}", record=opened.hash)
        except Exception as error:  # a run's stop, counted and tried again (C4)
            tending.failed(record_dir, "stop", error, time.time(), 0)
    if running:
        return  # answered once its end is recorded (its stop step pokes the node)
    tending.decide(record_dir, *tending.ended_unstarted(record_dir, "its check-in run was ended, no later one runs"))
