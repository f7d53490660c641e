"""What the tools need of Fossil beyond reads and forms: a push as a given
login from any clone file, and which check-ins a clone holds that a
repository lacks (C6 `push`, D22).
"""
from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ocx.fossil.program import FossilError, run_fossil_with_password
from ocx.fossil.records import Checkin
from ocx.fossil.repository import Repository
from ocx.fossil.sync import login_url


def new_checkins(clone: Repository, served: Repository) -> list[Checkin]:
    """The check-ins in CLONE that SERVED does not hold, oldest first."""
    hashes = [row[0] for row in clone._rows(
        "SELECT b.uuid FROM event e JOIN blob b ON b.rid=e.objid WHERE e.type='ci' ORDER BY e.mtime, b.rid")]
    held = {h for h in hashes if served._one("SELECT 1 FROM blob WHERE uuid=? AND size>=0", (h,))}
    return [clone.checkin(h) for h in hashes if h not in held]


def push_as(clone: Path | str, base_url: str, login: str, password: str, *, home: Path | str) -> None:
    """Push everything new in CLONE to BASE_URL as LOGIN, once: the URL (and
    its password) is not remembered in the clone (`--once`), so a clone that
    holds no password still holds none afterwards (C6). The password goes to
    Fossil's prompt, never on its command line (D41)."""
    try:
        out = run_fossil_with_password(["push", "--once", login_url(base_url, login), "-R", str(clone)], password,
                                       home=home, user=login).stdout
    except FossilError as exc:
        raise FossilError(["push", base_url], exc.returncode, "", exc.stderr.replace(password, "***")) from None
    if "not authorized to write" in out or "Error:" in out:
        raise FossilError(["push", base_url], 0, out.replace(password, "***"), "the server refused the push")


def ticket_id(repository: Repository, prefix: str) -> str | None:
    """The full id of the one ticket PREFIX names; None if none; ValueError if several."""
    rows = repository._rows("SELECT tkt_uuid FROM ticket WHERE tkt_uuid>=? AND tkt_uuid<? LIMIT 2",
                            (prefix, prefix + "g")) if repository._has_table("ticket") else []
    if len(rows) > 1:
        raise ValueError(f"{prefix} names more than one ticket")
    return rows[0][0] if rows else None


# Fossil keeps a saved sync password "obscured": a salt byte, then each byte
# XORed with the salt and this 16-byte key (found from clones of known
# passwords; the same in every clone). Obscured, not secret (D22).
_OBSCURER = bytes.fromhex("a72131e32a502c864ca45225ff493585")


def unobscure(text: str) -> str:
    data = bytes.fromhex(text)
    salt, body = data[0], data[1:]
    return bytes(b ^ _OBSCURER[i & 15] ^ salt for i, b in enumerate(body)).decode()


@dataclass(frozen=True)
class SavedLogin:
    """What a clone made with --save-http-password knows of its server (D22)."""

    base_url: str
    login: str
    password: str


def saved_login(clone: Path | str) -> SavedLogin | None:
    with Repository(clone) as repository:
        url, obscured = repository.config("last-sync-url"), repository.config("last-sync-pw")
    if not url or not obscured:
        return None
    parts = urllib.parse.urlsplit(url)
    if not parts.username:
        return None
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
    base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return SavedLogin(base.rstrip("/"), urllib.parse.unquote(parts.username), unobscure(obscured))
