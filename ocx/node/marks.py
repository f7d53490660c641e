"""The marks of a record's directory, read and written through states.py's table.

Every mark of a record's life is written here, by whichever process writes
it (the node, a unit's preparation, a unit's stop step): `write` reads the
marks already there, checks the change against the table and writes the
file aside, then renames it, so a reader sees it whole or not at all.
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


@contextmanager
def one_look() -> Iterator[None]:
    """Within it, each directory's marks are listed once (docs/node.md, 'Measured': a pass of the node listed each
    record's directory five times, a quarter of its CPU in a burst). What this process writes is seen
    at once; what another writes meanwhile (a preparation, a stop step) is seen by the next look,
    as it would be had it come a moment later: each of them pokes the node when it is written."""
    token = _LOOK.set({})
    try:
        yield
    finally:
        _LOOK.reset(token)


def look_again() -> None:
    """Within a look, forget every listing, so what is read next is the files as they are now. The node
    asks for it each time it has read systemd's units: a stop step writes its `ended` mark before
    systemd calls its unit ended, so marks listed after the units never miss the end of a unit seen
    gone (marks listed before them did: the pass's second tending answered a run that ended meanwhile
    `lost`, or wrote its end a second time, StateError "a run ended cannot take 'ended'")."""
    look = _LOOK.get()
    if look is not None:
        look.clear()


def file_name(mark: Mark, stem: str | None = None) -> str:
    return f"{mark.value}-{stem}.json" if stem else f"{mark.value}.json"


def present(directory: Path) -> Present:
    """The record's own marks, and each run's (by its unit's stem), as files say now (or at this look)."""
    look = _LOOK.get()
    if look is None:
        return _listed(directory)
    key = str(directory)
    if key not in look:
        look[key] = _listed(directory)
    return look[key]


def _forget(directory: Path) -> None:
    look = _LOOK.get()
    if look is not None:
        look.pop(str(directory), None)


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


def state_of(directory: Path) -> RecordState:
    return record_state(present(directory)[0])


def run_state_of(directory: Path, stem: str) -> RunState:
    return run_state(present(directory)[1].get(stem, frozenset()))


def write(directory: Path, mark: Mark, body: dict | str | None = None, stem: str | None = None) -> None:
    """Make one change of the record in DIRECTORY (a run's when STEM is given),
    as the table allows, or raise StateError. Checked against the files as they are now."""
    _forget(directory)
    own, runs = present(directory)
    if mark in RUN_MARKS:
        if not stem:
            raise ValueError(f"{mark.value} is a run's mark: name its unit's stem")
        after_run(run_state(runs.get(stem, frozenset())), mark)
    else:
        after_record(record_state(own), mark)
    text = body if isinstance(body, str) else json.dumps(body or {}) + "\n"
    write_atomically(directory / file_name(mark, stem if mark in RUN_MARKS else None), text)
    _forget(directory)


def reset(directory: Path, stem: str) -> None:
    """A run's marks removed, so it runs again, as the table allows."""
    _forget(directory)
    after_run(run_state_of(directory, stem), RESET)
    for mark in RUN_MARKS:
        (directory / file_name(mark, stem)).unlink(missing_ok=True)
    _forget(directory)


def read(directory: Path, mark: Mark, stem: str | None = None) -> dict | None:
    try:
        return json.loads((directory / file_name(mark, stem)).read_text())
    except (FileNotFoundError, ValueError):
        return None


# -- failures (states.Failure): the node's own bookkeeping, under its lock -----

def failures(directory: Path) -> dict[str, Failure]:
    try:
        raw = json.loads((directory / FAILURES).read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return {step: Failure(step, f["count"], f["first"], f["error"], f["fault"], f.get("last", f["first"]))
            for step, f in raw.items()}


def _save_failures(directory: Path, found: dict[str, Failure]) -> None:
    path = directory / FAILURES
    if not found:
        path.unlink(missing_ok=True)
        return
    write_atomically(path, json.dumps({s: {"count": f.count, "first": f.first, "error": f.error, "fault": f.fault,
                                           "last": f.last} for s, f in found.items()}) + "\n")


def note_failure(directory: Path, step: str, error: str, fault: bool, now: float | None = None) -> Failure:
    """Count one more failure of STEP; returns the count so far."""
    found = failures(directory)
    before = found.get(step)
    now = time.time() if now is None else now
    failure = Failure(step, (before.count if before else 0) + 1, before.first if before else now, error[:500], fault,
                      now)
    found[step] = failure
    _save_failures(directory, found)
    return failure


def clear_failure(directory: Path, step: str) -> None:
    found = failures(directory)
    if found.pop(step, None) is not None:
        _save_failures(directory, found)
