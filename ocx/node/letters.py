"""What a run user's letters may be when a run is prepared, and when they say enforcement is lost (C5, D24, D40).

Standard library only: the preparation (prepare.py) and the node's pass
(node_service/enforcement.py) decide from the same rules, and read the one file
that says the record gave its run user letters (GIVEN).

The preparation gives a run user exactly D19's letters. What it finds
before it does decides whether it may, and it never quietly resets what it
finds changed (a reset would hide that someone gave the user more, and
would let the run go on as if nothing had been given):

- nothing (a new login, or an idle one, D40; or this record's own letters
  not given yet): it gives them;
- this record gave them before (a command record's earlier check-in, a
  preparation tried again) and they are exactly D19's: it gives them again
  (a new password);
- this record never gave them, and the login holds any letter: someone gave
  it letters after the record was admitted (D40 is checked again at the
  delayed start): the record is refused naming `user`, and the login is
  left as it is, letters and password (C5 takes away only what a run was given);
- this record gave them, and they are not D19's any more: the node no longer
  holds what it promised (D24): the record is answered `unenforced`.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..files import StampedReads, write_atomically
from ..protocol.errors import OcxError

# D19: clone (g), check in and push (i, which brings o), read tickets (r),
# read the forum (2), post to it (3) unmoderated (4). Nothing else of its own:
# no admin, setup, password change, nor u/v's inherited letters. Every login
# still holds `nobody`'s letters, as Fossil gives them to anyone.
RUN_USER_CAPABILITIES = "gior234"
GIVEN = "given.json"  # in the record's directory: this record gave its run user letters (written before it does)


def gave_letters(record_dir: Path) -> bool:
    """Whether the record in RECORD_DIR gave its run user letters (or was about to)."""
    return (record_dir / GIVEN).exists()


# GIVEN's answer, by its path: the node's every pass asks it of every open record (enforcement.py), and a
# file's stat is a fraction of its open, read and parse.
_SET = StampedReads()


def letters_set(record_dir: Path) -> bool:
    """Whether the record's run user holds the letters it was given, set: before, a new login holds
    Fossil's default-perms (`u`) for the instant between its making and its letters (fossil/admin.py)."""
    path = record_dir / GIVEN
    try:
        return bool(_SET.read(str(path), path, _set_in))
    except (OSError, ValueError, AttributeError):
        return False


def _set_in(given: Path) -> bool:
    return bool(json.loads(given.read_bytes()).get("set"))


def note_given(record_dir: Path, login: str, *, done: bool = False) -> None:
    """The record gives LOGIN letters: kept before they are given (so a later preparation knows the
    letters it finds are the record's own), and again once they are set (DONE: the node's pass then
    judges them)."""
    if not gave_letters(record_dir) or (done and not letters_set(record_dir)):
        write_atomically(record_dir / GIVEN, json.dumps({"user": login, "at": time.time(), "set": done}) + "\n")


class LettersFound(OcxError):
    """The run user holds letters the node did not leave it: the run is not prepared."""

    kind = ""

    def mark(self) -> dict[str, str]:
        """What the `unprepared` mark keeps, for the node's answer (run_end.preparation_refusal)."""
        return {self.kind: str(self)}


class NotIdle(LettersFound):
    """D40 at the delayed start: refused naming `user`, the login untouched."""

    kind = "refused_user"


class LettersChanged(LettersFound):
    """D24: what this record's run user was given changed: answered `unenforced`."""

    kind = "unenforced"


def beyond_run(held: str | None) -> str:
    """HELD's letters beyond a run's, sorted ('' when none)."""
    return "".join(sorted(set(held or "") - set(RUN_USER_CAPABILITIES)))


def check_found(login: str, held: str | None, given: bool, settled: bool = False) -> None:
    """Raise NotIdle or LettersChanged unless the preparation may give LOGIN D19's letters now.
    HELD: its own letters (None: no such login); GIVEN: this record gave it letters before (or was
    about to); SETTLED: they were set (letters_set), so none left means someone took them all."""
    if not held:
        if settled:
            raise LettersChanged(f"run user {login} holds none of its run's {RUN_USER_CAPABILITIES!r} any more "
                                 f"({'it was deleted' if held is None else 'they were taken'}): the node no longer "
                                 "holds what it promised (D24)")
        return
    if not given:
        raise NotIdle(f"user: {login!r} holds capabilities {held!r} now: a run user is new, or holds no "
                      "capability when its run starts (D40); it was left as it is")
    if set(held) != set(RUN_USER_CAPABILITIES):
        beyond = beyond_run(held)
        what = f"was given {beyond!r} beyond its run's" if beyond else f"holds {held!r}, not its run's"
        raise LettersChanged(f"run user {login} {what} {RUN_USER_CAPABILITIES!r}: the node no longer holds what "
                             "it promised (D24)")


def enforcement_lost(login: str, held: str | None, admin: bool, given: bool) -> str | None:
    """The node's pass (D24): why a record whose run user is LOGIN lost enforcement, or None. Only
    once the record's letters were set (GIVEN: letters_set): before, the preparation decides (D40)."""
    if not given:
        return None
    if admin:
        return f"run user {login} was given admin or setup"
    beyond = beyond_run(held)
    if beyond:
        return f"run user {login} was given {beyond!r} beyond its run's {RUN_USER_CAPABILITIES!r}"
    return None
