"""A record's life on its node, in one table (docs/node.md, 'A record's life'; in the spirit of h11's _state.py).

Pure: no I/O, standard library only (the stop step and the preparation use
it too). A record's state on the node is the set of marks in its directory
(record_store.RecordStore, the only writer): each mark is one change, kept
as a file named as the mark (Mark.RECORD is `record.json`, Mark.ENDED a
run's `ended-STEM.json`) so that a node killed anywhere finds, on its next
pass, where it was (D2: a shortcut; the repository decides). Two machines:

- the record's own, from its saving to its answer: OPEN (its RECORD mark),
  then a stop or a lost restriction, then ANSWERING (the answer is decided
  and written next), then ANSWERED (it is in the repository and the run
  user's letters are withdrawn, C4, C5);
- each run's (one unit: a session's one, each check-in's for a command
  record): STARTING (the node is about to ask systemd), STARTED, PREPARED
  or UNPREPARED (its home made, or not), ENDED (its stop step kept
  systemd's account of the end, D4; run_end.py tells it), JUDGING and
  JUDGED (a check-in's `ci` verdict decided, then in the repository, its
  VERDICT mark, V1).

Marks come from three writers that do not wait for each other (the node,
the unit's preparation, the unit's stop step), so a run's marks may land in
any order the table allows: an end may be recorded before the node records
that systemd took the start. A change the table does not allow raises
StateError: it would be a bug, never a run's doing.

Every step that fails is counted in the record's failures; `gives_up`
says when to stop trying and answer instead (C4; docs/node.md, 'Faults').
"""
from __future__ import annotations

from enum import Enum
from typing import Final

from ..protocol.errors import OcxError


class StateError(OcxError, RuntimeError):
    """A change the table does not allow from the state the record is in."""


class Mark(str, Enum):
    """One change, one file, named as the member: `name.json` for the record's, `name-STEM.json` for a run's.
    The files' names are what nodes wrote before (an upgraded node reads them), so a member is named
    for its file, never a file renamed for its member."""

    RECORD = "record"  # the record as read, admitted (C3): the record is OPEN
    STOP = "stop"  # a stop was acted on: no run starts; the answer is `stopped`
    UNENFORCED = "unenforced"  # a restriction no longer held: the run is ended (D24)
    ANSWERING = "answering"  # the answer is decided (outcome, note); written next
    ANSWERED = "answered"  # the repository holds the answer; the letters are withdrawn
    STARTING = "starting"  # the node is about to ask systemd for the unit (D5: twice is harmless)
    STARTED = "started"  # systemd took the start
    PREPARED = "prepared"  # the run's home is made: its program runs
    UNPREPARED = "unprepared"  # its home could not be made: its program never ran
    ENDED = "ended"  # its stop step kept systemd's account of its end (D4)
    JUDGING = "judging"  # a check-in run's verdict is decided; written next (V1)
    VERDICT = "verdict"  # the run is JUDGED: its `ci` verdict is in the repository, or none is due (a stop)


RECORD_MARKS = (Mark.RECORD, Mark.STOP, Mark.UNENFORCED, Mark.ANSWERING, Mark.ANSWERED)
RUN_MARKS = (Mark.STARTING, Mark.STARTED, Mark.PREPARED, Mark.UNPREPARED, Mark.ENDED, Mark.JUDGING, Mark.VERDICT)
RESET = "reset"  # a run's marks removed, so it runs again


class RecordState(str, Enum):
    NEW = "new"  # no directory: never acted on (or removed after its answer: the repository tells)
    OPEN = "open"
    UNENFORCED = "unenforced"
    STOPPING = "stopping"
    ANSWERING = "answering"
    ANSWERED = "answered"


class RunState(str, Enum):
    NONE = "none"  # not asked for yet, or reset to run again
    STARTING = "starting"
    STARTED = "started"
    PREPARED = "prepared"
    UNPREPARED = "unprepared"
    ENDED = "ended"
    JUDGING = "judging"
    JUDGED = "judged"


S, R = RecordState, RunState

# state -> {change: the state after it}. Only these changes are allowed.
RECORD_CHANGES: dict[RecordState, dict[Mark, RecordState]] = {
    S.NEW: {Mark.RECORD: S.OPEN,
            Mark.ANSWERING: S.ANSWERING},  # refused before it was ever saved (D8, C6)
    S.OPEN: {Mark.STOP: S.STOPPING, Mark.UNENFORCED: S.UNENFORCED, Mark.ANSWERING: S.ANSWERING,
             Mark.ANSWERED: S.ANSWERED},  # its answer read back from the repository (F3, D31)
    S.UNENFORCED: {Mark.STOP: S.STOPPING, Mark.ANSWERING: S.ANSWERING, Mark.ANSWERED: S.ANSWERED},
    S.STOPPING: {Mark.STOP: S.STOPPING,  # a second stop, or the same one read again (D5)
                 Mark.ANSWERING: S.ANSWERING, Mark.ANSWERED: S.ANSWERED},
    S.ANSWERING: {Mark.ANSWERED: S.ANSWERED},  # the decided answer is never changed
    S.ANSWERED: {},
}

RUN_CHANGES: dict[RunState, dict[Mark | str, RunState]] = {
    R.NONE: {Mark.STARTING: R.STARTING},
    R.STARTING: {Mark.STARTED: R.STARTED, Mark.PREPARED: R.PREPARED, Mark.UNPREPARED: R.UNPREPARED,
                 Mark.ENDED: R.ENDED, RESET: R.NONE},  # never reached systemd: asked again
    R.STARTED: {Mark.PREPARED: R.PREPARED, Mark.UNPREPARED: R.UNPREPARED, Mark.ENDED: R.ENDED,
                RESET: R.NONE},  # a check-in run whose unit vanished without an end runs again
    # STARTED after these: the node records systemd's reply once the unit is already under way.
    R.PREPARED: {Mark.STARTED: R.PREPARED, Mark.ENDED: R.ENDED, RESET: R.NONE},
    R.UNPREPARED: {Mark.STARTED: R.UNPREPARED, Mark.ENDED: R.ENDED, RESET: R.NONE},
    R.ENDED: {Mark.STARTED: R.ENDED, Mark.JUDGING: R.JUDGING, Mark.VERDICT: R.JUDGED,
              RESET: R.NONE},  # its home could not be made for a fault of the node's own: again
    R.JUDGING: {Mark.VERDICT: R.JUDGED},  # the decided verdict is never changed
    R.JUDGED: {},
}


def record_state(present: frozenset[Mark]) -> RecordState:
    """The record's state from the marks in its directory."""
    for mark, state in ((Mark.ANSWERED, S.ANSWERED), (Mark.ANSWERING, S.ANSWERING), (Mark.STOP, S.STOPPING),
                        (Mark.UNENFORCED, S.UNENFORCED), (Mark.RECORD, S.OPEN)):
        if mark in present:
            return state
    return S.NEW


def run_state(present: frozenset[Mark]) -> RunState:
    """One run's state from its marks: the furthest it got."""
    for mark, state in ((Mark.VERDICT, R.JUDGED), (Mark.JUDGING, R.JUDGING), (Mark.ENDED, R.ENDED),
                        (Mark.UNPREPARED, R.UNPREPARED), (Mark.PREPARED, R.PREPARED), (Mark.STARTED, R.STARTED),
                        (Mark.STARTING, R.STARTING)):
        if mark in present:
            return state
    return R.NONE


def after_record(state: RecordState, change: Mark) -> RecordState:
    allowed = RECORD_CHANGES[state]
    if change not in allowed:
        raise StateError(f"a record {state.value} cannot take {change.value!r}"
                         f" (allowed: {', '.join(m.value for m in allowed) or 'nothing'})")
    return allowed[change]


def after_run(state: RunState, change: Mark | str) -> RunState:
    allowed = RUN_CHANGES[state]
    if change not in allowed:
        raise StateError(f"a run {state.value} cannot take {getattr(change, 'value', change)!r}"
                         f" (allowed: {', '.join(getattr(m, 'value', m) for m in allowed) or 'nothing'})")
    return allowed[change]


def acting(state: RecordState) -> bool:
    """Whether arrivals still reach the record: deliveries, stops (C3). Once its
    answer is decided nothing does, and the decided answer is what is written."""
    return state in (S.OPEN, S.UNENFORCED, S.STOPPING)


def ending(state: RecordState) -> bool:
    """Whether its run is to be ended now (a stop, or a restriction lost)."""
    return state in (S.STOPPING, S.UNENFORCED)


# -- failures: tried again within a bound, then answered (C4) ---------------

MAX_ATTEMPTS = 3  # a failure not the node's own fault: the same step failing this often will not pass
FAULT_GRACE_SECONDS = 60.0  # a fault of the node's own is waited out at least this long
RETRY_FIRST_SECONDS, RETRY_MOST_SECONDS = 1.0, 10.0


class Failure:
    """One step of a record that failed, and how often. A plain class, not a dataclass: a run's
    preparation imports this module, and dataclasses' import (inspect, ast) was a fifth of its start;
    nor a NamedTuple, whose tuple.count its `count` would hide."""

    __slots__ = ("step", "count", "first", "error", "fault", "last")

    def __init__(self, step: str, count: int, first: float, error: str, fault: bool, last: float = 0.0) -> None:
        self.step: Final = step
        self.count: Final = count
        self.first: Final = first
        self.error: Final = error
        self.fault: Final = fault  # the node's own (its server, its bus, its disk), not the record's
        self.last: Final = last  # when it last failed

    def _fields(self) -> tuple[str, int, float, str, bool, float]:
        return self.step, self.count, self.first, self.error, self.fault, self.last

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Failure) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "Failure(" + ", ".join(f"{k}={v!r}" for k, v in zip(self.__slots__, self._fields(), strict=True)) + ")"

    def deadline(self, received: float, wall_seconds: float) -> float:
        """C4's `lost`: a fault of the node's own is waited out within the record's
        wall, and at least FAULT_GRACE_SECONDS after it first came."""
        return max(received + wall_seconds, self.first + FAULT_GRACE_SECONDS)

    def gives_up(self, now: float, received: float, wall_seconds: float) -> bool:
        if self.fault:
            return now >= self.deadline(received, wall_seconds)
        return self.count >= MAX_ATTEMPTS

    def retry_in(self) -> float:
        """Seconds from the last failure to the next try: doubling, from 1 s up to 10 s."""
        return min(RETRY_MOST_SECONDS, RETRY_FIRST_SECONDS * 2.0 ** max(0, self.count - 1))

    def due(self, now: float) -> bool:
        """Whether the next try may come now (a pass that comes sooner leaves it be)."""
        return now >= self.last + self.retry_in()

    def wait(self, now: float) -> float:
        return max(0.0, self.last + self.retry_in() - now)
