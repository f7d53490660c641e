"""Artifact hashes and server-codes as plain strings (D11).

Every pattern of OCX is matched against the whole value (`fullmatch`): a
`$` would also accept a trailing newline, and `"adm\n"` is another Fossil
login than `adm` that displays as it (docs/security.md, 'Class 7')."""
from __future__ import annotations

import re

# D11: SHA1 (40 hex digits) or SHA3-256 (64); messages and tags hold these.
FULL_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# Part 4: a tool accepts 10 or more leading hex digits.
HASH_PREFIX = re.compile(r"[0-9a-f]{10,64}")
# F: a repository's server-code is 40 random hex digits.
SERVER_CODE = re.compile(r"[0-9a-f]{40}")


def is_full_hash(text: object) -> bool:
    return isinstance(text, str) and FULL_HASH.fullmatch(text) is not None


def is_hash_prefix(text: object) -> bool:
    return isinstance(text, str) and HASH_PREFIX.fullmatch(text) is not None


def short(hash_: str, digits: int = 12) -> str:
    """The leading digits that name a run in a unit name (D3)."""
    return hash_[:digits]
