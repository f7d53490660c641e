"""Typed failures of reading a repository (D11: an unknown or ambiguous
prefix stops a tool, naming the field)."""
from __future__ import annotations

# sqlite3's errors are its C module's: the package's import (dbapi2, datetime) was a tenth of a run's
# preparation's imports, which read nothing by sqlite (docs/node.md, 'Preparing a run').
from _sqlite3 import Error as SqliteError

from ..protocol.errors import OcxError


class FossilLayerError(OcxError):
    """What the Fossil layer raises: a read of the repository, `fossil` itself,
    its web pages, a stored artifact that does not decode, a run's clone.
    Whether one passes by itself: fossil/faults.py (C4)."""


class RepositoryUnreadable(FossilLayerError):
    """A repository file that cannot be opened as one: not a database, damaged, unreadable."""


class JournalWaiting(RepositoryUnreadable):
    """A cut-off write's journal this process may not roll back: Fossil's server will, on its next
    request, so the read passes by itself (faults.py)."""


# What a use of the Fossil layer may raise without a bug: its own errors;
# sqlite's, for a repository file busy, locked or damaged mid-read, which reads
# pass on as sqlite raises them; and the OS's (a file missing, a full disk,
# `fossil` not starting). fossil/faults.py tells which pass by themselves.
# Callers outside the layer, which never import sqlite3, catch these.
FOSSIL_FAILURES: tuple[type[Exception], ...] = (FossilLayerError, SqliteError, OSError)


class RepositoryError(FossilLayerError, LookupError):
    """A read that names something the repository does not have as asked."""


class BadPrefix(RepositoryError, ValueError):
    """Not 10 to 64 lowercase hex digits (D11)."""


class UnknownArtifact(RepositoryError):
    def __init__(self, prefix: str):
        super().__init__(f"{prefix}: no artifact has this hash")
        self.prefix = prefix


class AmbiguousPrefix(RepositoryError):
    def __init__(self, prefix: str, matches: list[str]):
        super().__init__(f"{prefix}: names more than one artifact ({', '.join(m[:16] for m in matches)})")
        self.prefix = prefix
        self.matches = tuple(matches)


class WrongKind(RepositoryError):
    """The artifact exists but is not the kind asked for (a post, a check-in...)."""


class UnknownUser(RepositoryError):
    def __init__(self, login: str):
        super().__init__(f"{login}: no such user")
        self.login = login
