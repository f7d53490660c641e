"""Whether a failure of the Fossil layer may pass by itself: its server down
or restarting, its repository file busy. The node tries such a step again
later instead of holding it against the record (C4).

Decided by type only, from what the part that met the failure typed: the
Cause of a `fossil` run, a page's HTTP status and a connection's errno
(web.py), SQLite's result code; never by the words of a message. Where
Fossil tells only in words, they are read where they are met, once:
fossil_failure.py's table for the `fossil` program, web.LOCKED_SAYS for its pages.
"""
from __future__ import annotations

import errno
import sqlite3
from typing import TYPE_CHECKING

from .fossil_failure import Cause

if TYPE_CHECKING:
    from .web import WebError

# Result codes of a database another connection holds: busy (a writer, or a
# reader while we write) or locked (a table, in the same process). Their
# extended codes (SQLITE_BUSY_RECOVERY...) keep the primary in the low byte.
_SQLITE_PASSING = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
# An error made by hand carries no code: SQLite's own text for the code, sqlite3_errstr, names it.
_SQLITE_TEXTS = {"database is locked": sqlite3.SQLITE_BUSY, "database table is locked": sqlite3.SQLITE_LOCKED}

# Beside ConnectionError's and TimeoutError's (refused, reset, aborted, timed out), the
# errno of a connection cut while the server restarts that Python gives no class of its own.
_PASSING_ERRNOS = {errno.ENETRESET}


# A `fossil` run's causes that pass: its server or file not there for it now.
_PASSING_CAUSES = {Cause.UNREACHABLE, Cause.CUT_OFF, Cause.TIMED_OUT, Cause.SERVER_ERROR, Cause.BUSY,
                   Cause.UNOPENABLE, Cause.FULL}


def passes(error: BaseException) -> bool | None:
    """True or False for an error of this layer; None for any other."""
    from .errors import JournalWaiting
    from .fossil_failure import FossilError
    from .web import WebError

    if isinstance(error, JournalWaiting):
        return True
    if isinstance(error, FossilError):
        return error.cause in _PASSING_CAUSES
    if isinstance(error, WebError):
        return web_passes(error)
    if isinstance(error, sqlite3.OperationalError):
        return (sqlite_code(error) & 0xFF) in _SQLITE_PASSING
    return None


def web_passes(error: WebError) -> bool:
    """A page's failure: a server error (5xx), a sync Fossil answered locked, or
    a connection the server refused, cut or let time out (web.py's __cause__)."""
    import urllib.error  # loaded already with web.py, which raised ERROR

    if error.status is not None and 500 <= error.status <= 599 or error.locked:
        return True
    cause = error.__cause__
    if isinstance(cause, urllib.error.URLError) and not isinstance(cause, urllib.error.HTTPError):
        cause = cause.reason if isinstance(cause.reason, BaseException) else None
    return connection_passes(cause)


def connection_passes(cause: BaseException | None) -> bool:
    """A connection's failure, by its type and errno (http.client's RemoteDisconnected is a
    ConnectionResetError). A broken pipe is held final, as it was before this went by type."""
    if isinstance(cause, BrokenPipeError) or not isinstance(cause, OSError):
        return False
    return isinstance(cause, (ConnectionError, TimeoutError)) or cause.errno in _PASSING_ERRNOS


def sqlite_code(error: sqlite3.Error) -> int:
    """SQLite's result code for ERROR: the one sqlite3 set, else the one its text is SQLite's own for, else -1."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code
    return _SQLITE_TEXTS.get(str(error), -1)
