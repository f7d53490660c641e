"""Every record this node holds, from its marks to its next step, on each pass (C4; docs/node.md, 'Faults').

A pass remembers nothing: it reads each record's marks (states.py) and
what systemd holds of its units now, and does what comes next. A node
killed between any two steps finds the next one on its next pass, or at
boot (D6, check.py). For a session:

| the record      | its run                                   | next                               |
| --------------- | ----------------------------------------- | ---------------------------------- |
| answering       | any                                       | write the answer (respond.py)      |
| answered        | a unit still runs / none                  | stop it / remove the workspace     |
| open            | ended (its stop step's record)            | answer from the end (node/run_end) |
| stop, unenforced| its unit runs                             | stop it                            |
| stop, unenforced| no unit                                   | answer `stopped` / `unenforced`    |
| open            | its unit ended, no record (systemd's)     | record the end from systemd        |
| open            | none yet, or never reached systemd        | start it (again: D5)               |
| open            | started, its unit gone, no end recorded   | answer `lost` (D6)                 |

Each record is tended on its own: a failure is logged with the record
(OCX_RECORD), counted in its marks and tried again on a later pass; when
states.Failure gives up, the record is answered, its note naming what
failed. Command records go their own way (checkin_runs.py).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..fossil.repository import Repository
from ..node import record_store, runner_homes
from ..node.admit import runner_page
from ..node.cut import cut_here
from ..node.faults import describe, is_node_fault
from ..node.record_dirs import RecordDir, record_dirs
from ..node.run_end import before_this_boot, decide_outcome, end_facts, end_from_systemd, letters_found
from ..node.run_layout import parse_unit_name, unit_stem
from ..node.states import Failure, Mark, RecordState, RunState, ending
from ..protocol.admission import Inadmissible
from ..protocol.messages import Outcome
from ..systemd.manager import ListedUnit
from .context import NodeContext
from .respond import answer, decide_answer
from .run_units import prepared_in_unit
from .start_stop import start_session, stop_session

if TYPE_CHECKING:
    from ..protocol.decide import OpenRecord
    from ..systemd.manager import Systemd

RUNNING = ("active", "activating", "reloading", "deactivating")
# docs/node.md, 'The node starts as many units as there are turns': at most this many runs' units
# prepare at once, as many as preparations take turns
# (turns.py); a session beyond them starts, in the order its record came, when one is done (its
# preparation pokes the node). A burst of 100 all started at once shared the cores among 100 Python
# starts and sandboxes' set-ups, and each run's program waited for nearly all of them.
STARTS_AT_ONCE = 2 * len(os.sched_getaffinity(0))  # the cores it may use (a cpuset), not the host's
START_AGAIN_SECONDS = 2.0  # a pass then, should no preparation's poke come (the node's socket gone, say)


@dataclass
class PassReport:
    receipts: int = 0
    actions: list[str] = field(default_factory=list)
    retry_in: float | None = None  # seconds until a step that failed may be tried again
    more: bool = False  # receipts were left unread for the next pass, which begins at once (intake.py)
    # The records the pass's receipts and checks acted on, for its second look (intake.run_pass); None: any.
    touched: set[str] | None = field(default_factory=set)
    running: frozenset[str] | None = None  # the run units active as the pass last read them (machines.py)

    def retry(self, seconds: float) -> None:
        self.retry_in = seconds if self.retry_in is None else min(self.retry_in, seconds)

    def acted_on(self, record_hash: str | None) -> None:
        """An action on RECORD_HASH (None: on no record of its own, so every record is looked at again)."""
        if record_hash is None:
            self.touched = None
        elif self.touched is not None:
            self.touched.add(record_hash)


@dataclass
class Units:
    """The node's run units as systemd holds them now: one ListUnitsByPatterns a pass."""

    by_name: dict[str, ListedUnit]

    @classmethod
    async def read(cls, systemd: Systemd, server_code: str) -> Units:
        return cls({u.name: u for u in await systemd.units([f"ocx-{server_code[:12]}-*"])})

    def live(self, name: str) -> bool:
        unit = self.by_name.get(name)
        return unit is not None and (unit.active_state in RUNNING or bool(unit.job))

    def held(self, name: str) -> ListedUnit | None:
        """The unit, if systemd made it: a run's cpu timer names its unit before the run starts
        (StopPropagatedFrom), which loads that name as a stub that never ran and ended nothing."""
        unit = self.by_name.get(name)
        return unit if unit is not None and unit.load_state == "loaded" else None

    def starting(self, name: str) -> bool:
        """Whether systemd is starting NAME: its ExecStartPre, the preparation, runs (or will)."""
        unit = self.by_name.get(name)
        return unit is not None and (unit.active_state == "activating" or unit.job == "start")

    def starting_by_record(self) -> dict[str, list[str]]:
        """The stems of the run units systemd is starting, by their record's stem (`ocx-NODE12-RECORD12`)."""
        found: dict[str, list[str]] = {}
        for name in self.by_name:
            parsed = parse_unit_name(name)
            if parsed is not None and self.starting(name):
                found.setdefault(f"ocx-{parsed[0]}-{parsed[1]}", []).append(name.removesuffix(".service"))
        return found

    def active(self) -> frozenset[str]:
        return frozenset(name for name, unit in self.by_name.items() if unit.active_state == "active")

    def of_record(self, server_code: str, record_hash: str) -> list[ListedUnit]:
        stem = unit_stem(server_code, record_hash)
        return [u for name, u in self.by_name.items() if name == f"{stem}.service" or name.startswith(f"{stem}-")]


@dataclass
class Tending:
    """One pass's look at every record."""

    context: NodeContext
    systemd: Any
    units: Units
    report: PassReport
    _shutdown: bool | None = None
    starts_left: int = STARTS_AT_ONCE  # this pass's sessions' starts that may still prepare in their units
    waiting_to_start: int = 0  # sessions left for a later pass: as many units prepare as may

    def shutting_down(self) -> bool:
        """Asked only when there is an end to answer: systemctl waits on a busy PID 1 (D4)."""
        from ..systemd.system_state import stopping

        if self._shutdown is None:
            self._shutdown = stopping()
        return self._shutdown

    # -- failures ----------------------------------------------------------
    def failed(self, record_dir: RecordDir, step: str, error: BaseException, received: float,
               wall_seconds: float) -> Failure:
        """Count it, log it with its record, and ask for another pass while it may still pass."""
        return self.failed_as(record_dir, step, describe(error), is_node_fault(error), received, wall_seconds)

    def failed_as(self, record_dir: RecordDir, step: str, what: str, fault: bool, received: float,
                  wall_seconds: float) -> Failure:
        try:
            failure = record_dir.note_failure(step, what, fault)
        except OSError:  # a full disk: nothing more can be kept; the next pass tries again
            failure = Failure(step, 1, time.time(), what, True, time.time())
        gives_up = failure.gives_up(time.time(), received, wall_seconds)
        whose = "a fault of the node's own" if fault else "failed"
        self.context.log(f"{step}: {whose} ({failure.count}): {what}" + ("; giving up" if gives_up else ""),
                         record=record_dir.hash, priority=3 if gives_up else 4)
        if not gives_up:
            self.report.retry(failure.retry_in())
        return failure

    def waiting(self, record_dir: RecordDir, step: str) -> bool:
        """Whether STEP failed lately and its next try is not due yet."""
        failure = record_dir.failures().get(step)
        if failure is None or failure.due(time.time()):
            return False
        self.report.retry(failure.wait(time.time()))
        return True

    def succeeded(self, record_dir: RecordDir, step: str) -> None:
        record_dir.clear_failure(step)

    # -- every record ------------------------------------------------------
    async def all(self, only: set[str] | None = None) -> None:
        """Every record, or ONLY these: a pass's second look, at the records its receipts acted on
        (intake.run_pass). The rest were tended moments before in the same pass, and what changes them
        meanwhile (a preparation done, a run's end) pokes the node for another: a burst's second looks
        tended every open record again, a seventh of the node's CPU (docs/node.md). A second look starts
        no session while the first left older ones waiting: first come, first started."""
        record_store.look_again()  # the marks as they are after self.units was read: a unit gone has its end seen
        every = record_dirs(self.context.config)
        starting = self.units.starting_by_record()
        server_code = self.context.server_code
        self.starts_left = STARTS_AT_ONCE - sum(_preparing(d, starting.get(unit_stem(server_code, d.hash), []))
                                                for d in every)
        if only is not None and self.waiting_to_start:
            self.starts_left = 0
        self.waiting_to_start = 0
        chosen = every if only is None else [d for d in every if d.hash in only]
        for record_dir in sorted(chosen, key=_received_order):  # first come, first started
            try:
                await self.record(record_dir)
            except Exception as error:  # one record's trouble stops no other
                self.context.log(f"tending failed: {describe(error)}", record=record_dir.hash, priority=3)
                self.report.retry(5.0)
        if self.waiting_to_start:
            self.context.log(f"{self.waiting_to_start} sessions wait to start: {STARTS_AT_ONCE} runs' units "
                             "prepare at once", priority=7)

    async def record(self, record_dir: RecordDir) -> None:
        from .checkin_runs import tend_record
        from .cleanup import clean_up

        state = record_dir.state
        if state is RecordState.NEW:
            return  # half-saved: its receipt is read again (the mark did not move past it)
        if state is RecordState.ANSWERED:
            await clean_up(self, record_dir)
        elif state is RecordState.ANSWERING:
            self.answer(record_dir)
        else:
            opened, _ = record_dir.load()
            if opened.record.is_command:
                await tend_record(self, record_dir, opened, state)
            else:
                await self.session(record_dir, opened, state)

    # -- answering ---------------------------------------------------------
    def decide(self, record_dir: RecordDir, outcome: Outcome, note: str, **extra: Any) -> None:
        decide_answer(self.context, record_dir, outcome, note, **extra)
        cut_here(self.context.config.name, "answering", record_dir.hash)
        self.report.actions.append(f"decided-{outcome.value}")
        self.answer(record_dir)

    def answer(self, record_dir: RecordDir) -> None:
        if self.waiting(record_dir, "answer"):
            return
        try:
            answer(self.context, record_dir)
        except Exception as error:  # the Fossil server down, say: the next pass tries again
            decided = record_dir.marked(Mark.ANSWERING) or {}
            target = decided.get("target") or {}
            received = target.get("received") if target else (record_dir.load()[0].received if record_dir.exists()
                                                              else time.time())
            self.failed(record_dir, "answer", error, received or time.time(), 0)
            return
        self.succeeded(record_dir, "answer")
        self.report.actions.append("answered")

    # -- sessions ----------------------------------------------------------
    async def session(self, record_dir: RecordDir, opened: OpenRecord, state: RecordState) -> None:
        stem = unit_stem(self.context.server_code, opened.hash)
        name = f"{stem}.service"
        run = record_dir.run_state(stem)
        found = letters_found(record_dir, stem)
        if found is not None:  # its unit, if any, fails by itself: its preparation did
            if not self.units.live(name):
                self.letters_changed(record_dir, state, found)
            return
        if run is RunState.ENDED:
            await self.answer_end(record_dir, opened, state, stem)
            return
        if self.units.live(name):
            unit = self.units.held(name)
            if ending(state) and unit is not None and unit.active_state != "deactivating" and unit.job != "stop":
                try:
                    await stop_session(self.context, self.systemd, record_dir, opened)
                except Exception as error:  # a session's stop, counted and tried again (C4)
                    self.failed(record_dir, "stop", error, opened.received, opened.record.budget.wall_seconds)
            return
        if run is not RunState.NONE and self.units.held(name) is not None:
            if await end_from_systemd(self.systemd, record_dir, stem) is not None:
                self.context.log(f"{name} ended without its stop step's record: answered from systemd's",
                                 record=opened.hash, priority=4)
                await self.answer_end(record_dir, opened, state, stem)
                return
        if ending(state):
            self.decide(record_dir, *self.ended_unstarted(record_dir))
            return
        if run is not RunState.NONE:
            present = record_dir.run_marks(stem)
            ran = Mark.STARTED in present or (prepared_in_unit(opened)
                                              and run in (RunState.PREPARED, RunState.UNPREPARED))
            if ran:  # D6: it started, its unit is gone, and nothing recorded its end
                starting = record_dir.marked(Mark.STARTING, stem) or {}
                why = ("the node went down during the session" if before_this_boot(starting.get("at"))
                       else "its unit is gone and no end of it was recorded")
                self.decide(record_dir, Outcome.lost, why)
                return
            record_dir.reset(stem)  # it never reached systemd: asked again (D5)
        await self.start(record_dir, opened)

    def letters_changed(self, record_dir: RecordDir, state: RecordState, found: dict[str, Any]) -> None:
        """A preparation found its run user's letters changed (node/letters.py), and gave none: refused
        naming `user`, the login left as it is (D40); or `unenforced` (D24)."""
        if "refused_user" in found:
            self.decide(record_dir, Outcome.refused, found["refused_user"], untouched=True)
            return
        if state is RecordState.OPEN:
            record_dir.mark(Mark.UNENFORCED, {"why": found["unenforced"]})
            self.context.log(f"unenforced: {found['unenforced']}", record=record_dir.hash, priority=4)
        self.decide(record_dir, *self.ended_unstarted(record_dir, "its run was not started"))

    def ended_unstarted(self, record_dir: RecordDir, ended: str = "the run was ended") -> tuple[Outcome, str]:
        """A stop (or a lost restriction) for a run that has no unit: nothing runs that could answer it."""
        stop = record_dir.marked(Mark.STOP)
        if stop is not None:
            return Outcome.stopped, f"stopped by {stop.get('by')} (stop {stop.get('stop')})"
        unenforced = record_dir.marked(Mark.UNENFORCED) or {}
        return Outcome.unenforced, f"{unenforced.get('why', 'a restriction no longer held')}; {ended}"

    async def start(self, record_dir: RecordDir, opened: OpenRecord) -> None:
        if self.waiting(record_dir, "start"):
            return
        gated = prepared_in_unit(opened)  # D34: a run the node prepares itself is one at a time already
        if gated and self.starts_left <= 0:
            self.waiting_to_start += 1
            self.report.retry(START_AGAIN_SECONDS)
            return
        try:
            with Repository(self.context.config.repository) as repository:
                page = runner_page(repository, opened.record.runner, self.context.served)  # D37: the server's
            if page is None:
                raise Inadmissible("runner", f"{opened.record.runner!r} is no longer offered on this node (D14)")
            await start_session(self.context, self.systemd, record_dir, opened, page)
            found = letters_found(record_dir, unit_stem(self.context.server_code, opened.hash))
            if found is not None:  # the node's own preparation (D34) found them: no unit will poke it
                self.letters_changed(record_dir, record_dir.state, found)
                return
        except Inadmissible as refusal:
            self.decide(record_dir, Outcome.refused, str(refusal))
        except Exception as error:  # a session's start, counted: tried again, then answered (C4)
            failure = self.failed(record_dir, "start", error, opened.received, opened.record.budget.wall_seconds)
            if failure.gives_up(time.time(), opened.received, opened.record.budget.wall_seconds):
                # C4: `refused` for what it cannot hold; its own fault outlasting the record's wall is `lost`.
                self.decide(record_dir, Outcome.lost if failure.fault else Outcome.refused,
                            f"the node could not start it: {failure.error}")
            return
        self.succeeded(record_dir, "start")
        if gated:
            self.starts_left -= 1
        self.report.actions.append("started")

    async def answer_end(self, record_dir: RecordDir, opened: OpenRecord, state: RecordState, stem: str) -> None:
        if self.shutting_down():
            return  # D4: a node shutting down writes no response; the next start answers lost
        ended = record_dir.marked(Mark.ENDED, stem) or {}
        budget = opened.record.budget
        facts = end_facts(ended, record_dir, budget.cpu)
        if facts.cut_off:
            self.decide(record_dir, Outcome.lost, "the node went down during the session (shut down)")
            return
        if facts.unprepared is not None and facts.unprepared_fault and not ending(state):
            # Its home could not be made for a fault of the node's own: the run never ran, so it runs again.
            failure = record_dir.failures().get("prepare")
            if failure is None or failure.last < ended.get("at", 0):  # this end not counted yet
                failure = self.failed_as(record_dir, "prepare", facts.unprepared, True, opened.received,
                                         budget.wall_seconds)
            if not failure.gives_up(time.time(), opened.received, budget.wall_seconds):
                if failure.due(time.time()):
                    record_dir.reset(stem)
                    await self.start(record_dir, opened)
                else:
                    self.report.retry(failure.wait(time.time()))
                return
        return_homes(self.context, record_dir, ended)
        decided = decide_outcome(facts, budget)
        if decided is not None:
            self.decide(record_dir, *decided)


def return_homes(context: NodeContext, record_dir: RecordDir, ended: dict[str, Any]) -> None:
    """What the run changed in its copies of its runner's homes, written back once it ended (D42)."""
    stem = str(ended.get("unit", "")).removesuffix(".service")
    try:
        count = runner_homes.copy_back(record_dir.path, stem)
    except OSError as error:  # the answer still goes out; the home keeps what it had
        context.log(f"runner homes not written back: {error}", record=record_dir.hash, priority=4)
        return
    if count:
        context.log(f"{count} files of the runner's homes written back from {stem}", record=record_dir.hash)


def _received_order(record_dir: RecordDir) -> int:
    """A record's receipt (D26: in the order the node reads them); a half-saved one, first."""
    try:
        return record_dir.load()[0].rcvid
    except (OSError, ValueError, KeyError):
        return 0


def _preparing(record_dir: RecordDir, starting: list[str]) -> int:
    """Its runs whose units systemd is starting (STARTING: their stems) and whose preparation has not
    ended: its mark, written before it pokes the node, says so before systemd does. Its directory is
    listed only when systemd starts one of its units."""
    if not starting:
        return 0
    runs = record_dir.present()[1]
    done = (Mark.PREPARED, Mark.UNPREPARED, Mark.ENDED)
    return sum(1 for stem in starting if stem in runs and not any(mark in runs[stem] for mark in done))
