"""What the node's git mirror says of people and verdicts (D49): pure.

Authors (D49). Fossil 2.21's `fossil git export` writes a
check-in's git author as its login and an address it finds in the login's
contact info, free text a login may hold anything in: a line break there
stops the export at that login's first check-in (`Missing > in ident
string`), and an address there claims any person's. The node exports from
a copy of its own whose contact info it writes itself from this rule: the
login's name stays the name (Fossil's), and the address is the login's
contact info only when it is a well-formed address (or `Name <address>`)
that no other login claims too, and only while every check-in naming that
login was sent by it (a U card is anyone's to write, D21); otherwise none.
A name a check-in gives that is no login gets none either: Fossil's export
would take such a name, when it holds an `@`, as its address.

Notes: `refs/notes/ocx` holds one note per check-in with verdicts, one line
per counted verdict (D25): its tag, sender, result, reason and objective,
each made one printable line, since a reason and a sender's text are
anyone's (D41) and `git log --notes=ocx` prints them to a terminal.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from .terminal import terminal_safe
from .verdict_rules import ReadVerdict

ADDRESS_MAX = 254  # RFC 5321's limit on a path
# An address: the local part of RFC 5322's dot-atoms (no quotes, spaces, brackets), a domain of
# letters, digits and hyphens in two labels or more. ASCII only: no look-alike letters.
_ADDRESS = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+",
    re.ASCII)
_NAMED = re.compile(r"[^<>\x00-\x1f\x7f]*<([^<>]*)>", re.ASCII)


def address_of(contact: str) -> str | None:
    """The address CONTACT is, alone or as `Name <address>`; None when it is anything else."""
    text = contact.strip(" ")
    named = _NAMED.fullmatch(text)
    candidate = named.group(1) if named else text
    if len(candidate) > ADDRESS_MAX or _ADDRESS.fullmatch(candidate) is None:
        return None
    return candidate


def author_addresses(contacts: Iterable[tuple[str, str]],
                     checkins: Iterable[tuple[str, str | None]] = ()) -> dict[str, str]:
    """Each author's address in the mirror, from (login, contact info) pairs and the check-ins' (user
    named, login that sent it) pairs: a login's own well-formed address, or "" when it has none,
    another login claims the same, or a check-in naming it was sent by anyone else (a U card is
    anyone's to write, D21); "" for each user a check-in names that is no login, since Fossil's export
    would take such a name as its own address."""
    found = {login: address_of(contact) for login, contact in contacts}
    claims = Counter(address.lower() for address in found.values() if address)
    pairs = list(checkins)
    forged = {user for user, sender in pairs if sender != user}
    addresses = {user: "" for user, _ in pairs}
    addresses.update({login: address if address and claims[address.lower()] == 1 and login not in forged else ""
                      for login, address in found.items()})
    return addresses


def _line(text: str | None) -> str:
    return terminal_safe(text or "", drop_sequences=True).replace("\n", " ").strip() or "-"


def note_text(counted: Iterable[ReadVerdict]) -> str:
    """The note of one check-in: its counted verdicts, one line each; "" when none counts."""
    lines = []
    for verdict in counted:
        parsed = verdict.verdict
        result = parsed.judgement.value if parsed else verdict.value
        reason = parsed.reason if parsed else None
        lines.append(f"{_line(verdict.tag)}: {_line(result)} by {_line(verdict.sender)}"
                     f" against {_line(verdict.objective)}: {_line(reason)}")
    return "".join(line + "\n" for line in sorted(lines))
