"""What a caller's clone says of its server and login (D22), a ticket's id
from a prefix (D11), and Fossil's obscuring of a saved sync password.
"""
from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ocx.fossil.repository import Repository


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
    """What a clone made over HTTP as a login knows of its server (D22): with
    --save-http-password, also the password, or, after its first sync, only
    the sync secret (fossil-facts.md)."""

    base_url: str
    login: str
    password: str | None


def saved_login(clone: Path | str) -> SavedLogin | None:
    with Repository(clone) as repository:
        url, obscured = repository.config("last-sync-url"), repository.config("last-sync-pw")
    if not url:
        return None
    parts = urllib.parse.urlsplit(url)
    if not parts.username or not parts.hostname:  # `http://alice@/`: a login, and no server named
        return None
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
    base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return SavedLogin(base.rstrip("/"), urllib.parse.unquote(parts.username),
                      unobscure(obscured) if obscured else None)
