"""Fossil's capability letters and their expansion, as Fossil does it at login
(login.c `login_set_capabilities` and `login_set_anon_nobody_capabilities`;
fossil-facts.md "Users and capabilities"). Pure: the caller supplies the
`user.cap` strings it read.

The result is the set of letters a login *effectively* holds, in the sense
of Fossil's own check (`login_has_capability`): `a` present means Fossil
treats the login as an admin. `u` and `v` are not kept: they only pull in the
`reader` and `developer` rows' letters.
"""
from __future__ import annotations

from collections.abc import Mapping

_ADMIN = frozenset("arwzjkfmhgnpetbclq23456C7ADio")

# What each letter grants by itself (Fossil's fall-through cases written out).
IMPLIES: dict[str, frozenset[str]] = {
    "s": _ADMIN | {"s"},
    "a": _ADMIN,
    "i": frozenset("io"),
    "k": frozenset("kjm"),
    "w": frozenset("wrnc"),
    "6": frozenset("65432"),
    "5": frozenset("5432"),
    "4": frozenset("432"),
    "3": frozenset("32"),
}
# Letters that grant only themselves. Others (legacy `d`, unknown) grant nothing.
_PLAIN = frozenset("ozhgpjmfl erncqtbxy2 7ACD".replace(" ", ""))
INHERITS = {"u": "reader", "v": "developer"}  # whose row's letters they pull in

# Names of the letters OCX cares about, for messages and docs.
MEANING = {
    "s": "setup", "a": "admin", "i": "check in (push anything)", "o": "check out",
    "g": "clone", "j": "read wiki", "k": "write wiki", "f": "new wiki page",
    "m": "append to wiki", "r": "read tickets", "n": "new tickets",
    "c": "append to tickets", "w": "write tickets", "2": "read forum",
    "3": "post to forum (moderated)", "4": "post to forum unmoderated",
    "5": "moderate forum", "6": "forum supervisor", "p": "change own password",
    "x": "private content", "y": "write unversioned", "z": "download zip",
    "h": "hyperlinks", "e": "view contact details", "u": "reader's letters",
    "v": "developer's letters",
}


def expand(letters: str, rows: Mapping[str, str]) -> frozenset[str]:
    """The letters LETTERS grant, with `u`/`v` pulling in the `reader` and
    `developer` rows of ROWS (each at most once, as Fossil guards it)."""
    granted: set[str] = set()
    pulled: set[str] = set()
    pending = [letters]
    while pending:
        for letter in pending.pop():
            if letter in IMPLIES:
                granted |= IMPLIES[letter]
            elif letter in _PLAIN:
                granted.add(letter)
            elif letter in INHERITS and letter not in pulled:
                pulled.add(letter)
                pending.append(rows.get(INHERITS[letter], ""))
    return frozenset(granted)


def effective_capabilities(login: str, rows: Mapping[str, str]) -> frozenset[str]:
    """What LOGIN holds when it acts: its own row's letters, `nobody`'s (every
    user gets them) and, for anyone logged in (not `nobody`), `anonymous`'s.

    ROWS maps logins to `user.cap` strings and must hold LOGIN; `nobody`,
    `anonymous`, `reader` and `developer` count as empty when missing.
    """
    if login not in rows:
        raise KeyError(login)
    own = rows[login] + rows.get("nobody", "")
    if login != "nobody":
        own += rows.get("anonymous", "")
    return expand(own, rows)


def holds_admin(capabilities: frozenset[str]) -> bool:
    """Admin or setup, as C1 counts a sender of a record or a stop (`s`
    implies `a`, so `a` alone decides)."""
    return "a" in capabilities
