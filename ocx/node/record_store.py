"""The record store: one record's directory, its marks read and written only here (docs/node.md, 'A record's life').

`RecordStore` owns a record's directory on its node: its state and each
run's, read from the marks there, and every mark written or removed
through its methods, each change checked against states.py's table. Three
processes write marks and wait for none of the others: the node (through
record_dirs.RecordDir, which adds the record's body and inbox), a unit's
preparation (run_steps/prepare.py) and a unit's stop step
(run_steps/stop_step.py, through run_end.py). A mark is written aside, then
renamed, so a reader sees it whole or not at all. A mark's file is its
name: `record.json`, `answered.json`, `ended-STEM.json`, `verdict-STEM.json`
(states.Mark). tests/guards/test_record_store.py keeps every other module
from writing, removing or naming a mark's file.
Standard library only: the stop step must return fast (D4).
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple  # not dataclasses: a run's preparation imports this (fossil/program.py)

from ..files import write_atomically  # one way to write a file whole (docs/architecture.md)
from .states import (
    RECORD_MARKS,
    RESET,
    RUN_MARKS,
    Failure,
    Mark,
    RecordState,
    RunState,
    after_record,
    after_run,
    record_state,
    run_state,
)

FAILURES = "failures.json"  # the record's failed steps and how often (states.Failure)
_BY_NAME = {mark.value: mark for mark in Mark}
Present = tuple[frozenset[Mark], dict[str, frozenset[Mark]]]
_LOOK: ContextVar[dict[str, Present] | None] = ContextVar("ocx_marks_look", default=None)
# Each record's saved body as read within the look (record_dirs.RecordDir.load), by its directory: the RECORD mark
# is written once, by the node under its lock (a pass holds it), so only this process's own mark changes it.
_SAVED: ContextVar[dict[str, Any] | None] = ContextVar("ocx_saved_look", default=None)


def _file_name(mark: Mark, stem: str | None = None) -> str:
    return f"{mark.value}-{stem}.json" if stem else f"{mark.value}.json"


# The record's own marks' files (record.json among them): what the tool service watches for (tool_socket.py).
RECORD_FILES = frozenset(_file_name(mark) for mark in RECORD_MARKS)


@contextmanager
def one_look() -> Iterator[None]:
    """Within it, each directory's marks are listed once (docs/node.md, 'Measured': a pass of the node listed each
    record's directory five times, a quarter of its CPU in a burst). What this process writes is seen
    at once; what another writes meanwhile (a preparation, a stop step) is seen by the next look,
    as it would be had it come a moment later: each of them pokes the node when it is written."""
    token, saved = _LOOK.set({}), _SAVED.set({})
    try:
        yield
    finally:
        _LOOK.reset(token)
        _SAVED.reset(saved)


def saved_in_look() -> dict[str, Any] | None:
    """Within a look, each record's saved body read so far, by its directory (record_dirs.RecordDir.load);
    a mark written through the store forgets its record's. None outside a look."""
    return _SAVED.get()


def look_again() -> None:
    """Within a look, forget every listing, so what is read next is the files as they are now. The node
    asks for it each time it has read systemd's units: a stop step writes its `ended` mark before
    systemd calls its unit ended, so marks listed after the units never miss the end of a unit seen
    gone (marks listed before them did: the pass's second tending answered a run that ended meanwhile
    `lost`, or wrote its end a second time, StateError "a run ended cannot take 'ended'")."""
    look = _LOOK.get()
    if look is not None:
        look.clear()


def _listed(directory: Path) -> Present:
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return frozenset(), {}
    own: set[Mark] = set()
    runs: dict[str, set[Mark]] = {}
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        base = name[: -len(".json")]
        if base in _BY_NAME and _BY_NAME[base] in RECORD_MARKS:
            own.add(_BY_NAME[base])
            continue
        head, _, stem = base.partition("-")
        if stem and head in _BY_NAME and _BY_NAME[head] in RUN_MARKS:
            runs.setdefault(stem, set()).add(_BY_NAME[head])
    return frozenset(own), {stem: frozenset(marks) for stem, marks in runs.items()}


class RecordStore(NamedTuple):
    """One record's directory: its marks, its state and its runs', its failed steps."""

    path: Path

    @property
    def hash(self) -> str:
        return self.path.name

    # -- reading -----------------------------------------------------------
    def present(self) -> Present:
        """The record's own marks, and each run's (by its unit's stem), as files say now (or at this look)."""
        look = _LOOK.get()
        if look is None:
            return _listed(self.path)
        key = str(self.path)
        if key not in look:
            look[key] = _listed(self.path)
        return look[key]

    def run_marks(self, stem: str) -> frozenset[Mark]:
        return self.present()[1].get(stem, frozenset())

    @property
    def state(self) -> RecordState:
        return record_state(self.present()[0])

    def run_state(self, stem: str) -> RunState:
        return run_state(self.run_marks(stem))

    @property
    def answered(self) -> bool:
        return self.state is RecordState.ANSWERED

    def marked(self, mark: Mark, stem: str | None = None) -> dict[str, Any] | None:
        """The body of MARK (a run's when STEM is given), or None: the file itself, not the look."""
        try:
            body = json.loads((self.path / _file_name(mark, stem)).read_text())
        except (FileNotFoundError, ValueError):
            return None
        return body if isinstance(body, dict) else None

    def saved_file(self) -> Path:
        """The RECORD mark's file, the record as read, for its reader (record_dirs.RecordDir.load)."""
        return self.path / _file_name(Mark.RECORD)

    # -- changing: only as states.py's table allows ---------------------
    def mark(self, mark: Mark, body: dict[str, Any] | str | None = None, stem: str | None = None) -> None:
        """Make one change of the record (a run's when STEM is given), as the table allows, or raise
        StateError. Checked against the files as they are now."""
        self._forget()
        own, runs = self.present()
        if mark in RUN_MARKS:
            if not stem:
                raise ValueError(f"{mark.value} is a run's mark: name its unit's stem")
            after_run(run_state(runs.get(stem, frozenset())), mark)
        else:
            after_record(record_state(own), mark)
        text = body if isinstance(body, str) else json.dumps(body or {}) + "\n"
        write_atomically(self.path / _file_name(mark, stem if mark in RUN_MARKS else None), text)
        self._forget()

    def reset(self, stem: str) -> None:
        """A run's marks removed, so it runs again, as the table allows."""
        self._forget()
        after_run(self.run_state(stem), RESET)
        for mark in RUN_MARKS:
            (self.path / _file_name(mark, stem)).unlink(missing_ok=True)
        self._forget()

    def _forget(self) -> None:
        look, saved = _LOOK.get(), _SAVED.get()
        if look is not None:
            look.pop(str(self.path), None)
        if saved is not None:
            saved.pop(str(self.path), None)

    # -- failures (states.Failure): the node's own bookkeeping, under its lock -----
    def failures(self) -> dict[str, Failure]:
        try:
            raw = json.loads((self.path / FAILURES).read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return {step: Failure(step, f["count"], f["first"], f["error"], f["fault"], f.get("last", f["first"]))
                for step, f in raw.items()}

    def note_failure(self, step: str, error: str, fault: bool, now: float | None = None) -> Failure:
        """Count one more failure of STEP; returns the count so far."""
        found = self.failures()
        before = found.get(step)
        now = time.time() if now is None else now
        failure = Failure(step, (before.count if before else 0) + 1, before.first if before else now, error[:500],
                          fault, now)
        found[step] = failure
        self._save_failures(found)
        return failure

    def clear_failure(self, step: str) -> None:
        found = self.failures()
        if found.pop(step, None) is not None:
            self._save_failures(found)

    def _save_failures(self, found: dict[str, Failure]) -> None:
        path = self.path / FAILURES
        if not found:
            path.unlink(missing_ok=True)
            return
        write_atomically(path, json.dumps({s: {"count": f.count, "first": f.first, "error": f.error, "fault": f.fault,
                                               "last": f.last} for s, f in found.items()}) + "\n")
