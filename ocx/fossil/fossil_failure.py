"""A failed `fossil` run, typed: why it failed (Cause), read from Fossil's own words, and the HTTP
status they name; and the error the Fossil layer raises for it (FossilError).

Only program.py starts `fossil`; this is what its failures mean, apart from the starting, so
that what reads a failure (fossil/faults.py, the node's passes) needs nothing of how it ran.
"""
from __future__ import annotations

import enum
import re
from collections.abc import Sequence

from .errors import FossilLayerError


class Cause(enum.Enum):
    """Why `fossil` failed, as far as its run tells: what fossil/faults.py
    decides by (C4: the node's own faults pass). OTHER: nothing tells."""

    UNREACHABLE = "no connection to the server"
    CUT_OFF = "the server's answer missing or cut short"
    TIMED_OUT = "timed out"
    SERVER_ERROR = "the server answered HTTP 5xx"
    BUSY = "a repository file busy (SQLITE_BUSY)"
    UNOPENABLE = "a file that would not open"
    FULL = "no space left"
    NO_SUCH_USER = "the login named is not in the repository"
    OTHER = "nothing typed"


# Fossil 2.21 exits 1 for every failure (fossil_fatal, printf.c) and names no
# errno, no SQLite code, and the HTTP status only inside its line "server
# says: NNN reason" (http.c): its words are all it tells. So they are read
# here, once, and turned into a Cause; nothing else reads Fossil's words to
# judge a failure. The first match names the Cause. Rows marked "passed on"
# are not in Fossil's own source: texts of the OS, OpenSSL or zlib it prints.
_FOSSIL_SAYS: tuple[tuple[str, Cause], ...] = (
    # user.c: "no such user: LOGIN". First: a login a record names may hold a later row's word ("busy").
    ("no such user: ", Cause.NO_SUCH_USER),
    ("cannot connect", Cause.UNREACHABLE),        # http_socket.c, http_ssl.c: "cannot connect to host"
    ("connection refused", Cause.UNREACHABLE),    # passed on: ECONNREFUSED's text
    ("connection reset", Cause.UNREACHABLE),      # passed on: ECONNRESET's
    ("connection closed", Cause.UNREACHABLE),     # passed on: OpenSSL's, for a peer that closed
    ("broken pipe", Cause.UNREACHABLE),           # passed on: EPIPE's, the server gone mid-request
    ("database is locked", Cause.BUSY),           # db.c's "Database error: " + sqlite3_errstr(SQLITE_BUSY)
    ("busy", Cause.BUSY),                         # SQLITE_BUSY named (db.c); passed on: EBUSY, ETXTBSY
    ("timed out", Cause.TIMED_OUT),               # passed on: ETIMEDOUT's; a run's own timeout (TimeoutExpired's text)
    ("unable to open", Cause.UNOPENABLE),         # sqlite3_errstr(SQLITE_CANTOPEN); blob.c, file.c
    ("no space", Cause.FULL),                     # passed on: ENOSPC's
    ("did not reply", Cause.CUT_OFF),             # http.c: "server did not reply"
    ("truncated", Cause.CUT_OFF),                 # http.c: "response truncated: got N bytes of M"
    ("unexpected end", Cause.CUT_OFF),            # passed on: zlib's, a compressed answer cut short
    (" 502 ", Cause.SERVER_ERROR),                # a proxy's status inside a page Fossil passes on
    (" 503 ", Cause.SERVER_ERROR),                # ("server sends error: ...", http.c)
)
# http.c prints a status other than 200 and the redirects as "server says: " and the status line's rest.
_STATUS_SAID = re.compile(r"server says: ([0-9]{3})\b", re.ASCII)

def said(stdout: str, stderr: str) -> tuple[Cause, int | None]:
    """What Fossil's output tells of why it failed: the Cause, and the HTTP
    status it names (None when it names none)."""
    text = f"{stderr} {stdout}".lower()
    status = _STATUS_SAID.search(text)
    http_status = int(status.group(1)) if status else None
    if http_status is not None and 500 <= http_status <= 599:
        return Cause.SERVER_ERROR, http_status
    return next((cause for words, cause in _FOSSIL_SAYS if words in text), Cause.OTHER), http_status


class FossilError(FossilLayerError, RuntimeError):
    """`fossil` exited non-zero (or could not start): says what and why.
    `cause`: why, typed (said() of its output unless given); `http_status`:
    the server's status when Fossil names one."""

    def __init__(self, args: Sequence[str], returncode: int, stdout: str, stderr: str, *,
                 cause: Cause | None = None):
        self.args_run = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        told, self.http_status = said(stdout, stderr)
        self.cause = cause if cause is not None else told
        shown = " ".join(self.args_run[:3])
        why = (stderr or stdout).strip() or "no output"
        super().__init__(f"fossil {shown} ... exited {returncode}: {why}")
