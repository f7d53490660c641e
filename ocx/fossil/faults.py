"""Whether a failure of the Fossil layer may pass by itself (C4): its
server down or restarting, its repository file busy. The node tries such a
step again later instead of holding it against the record (C4).
"""
from __future__ import annotations

import sqlite3

# What `fossil` (a clone, a push, a user change) says when its server or its file is not there for it now.
_PROGRAM_SAYS = ("cannot connect", "connection refused", "connection reset", "connection closed",
                 "database is locked", "busy", "timed out", "unable to open", "no space", "broken pipe",
                 "did not reply", "truncated", "unexpected end", "server says: 5", " 502 ", " 503 ")
_WEB_SAYS = ("database is locked", "http 5", "connection", "timed out")


def passes(error: BaseException) -> bool | None:
    """True or False for an error of this layer; None for any other."""
    from .errors import JournalWaiting
    from .program import FossilError
    from .web import WebError

    if isinstance(error, JournalWaiting):
        return True

    if isinstance(error, FossilError):
        text = f"{error.stderr} {error.stdout}".lower()
        return any(words in text for words in _PROGRAM_SAYS)
    if isinstance(error, WebError):
        return any(words in str(error).lower() for words in _WEB_SAYS)
    if isinstance(error, sqlite3.OperationalError):
        return "locked" in str(error) or "busy" in str(error)
    return None
