"""The only code that opens a repository file, and only to read it (but for
a run's own clone, which run_clone.py opens trusting nothing in it).

The file is opened read-only (`mode=ro`, `PRAGMA query_only`) with a busy
timeout: Fossil keeps writing it while we read (rollback journal, not WAL;
fossil-facts.md). Artifact bytes are decoded in Python (storage.py), so no
`fossil` process is needed to read. The sender of anything is read from
`rcvfrom`, never from a U card (F2, D21).
"""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ocx.fossil import capabilities, receipt_floor
from ocx.fossil.artifacts import Receipt, ReceivedArtifact, Sender, User
from ocx.fossil.errors import (
    AmbiguousPrefix,
    BadPrefix,
    JournalWaiting,
    RepositoryError,
    RepositoryUnreadable,
    UnknownArtifact,
    UnknownUser,
)
from ocx.fossil.manifest import Artifact, ManifestError, is_form_post, parse
from ocx.fossil.reads import WorkReads
from ocx.fossil.storage import MAX_ARTIFACT_BYTES, StorageError, content, hash_matches, size_of
from ocx.fossil.tag_reads import TagReads
from ocx.fossil.times import julian_to_datetime

BUSY_TIMEOUT_SECONDS = 10.0
_HEX = frozenset("0123456789abcdef")
MIN_PREFIX = 10  # D11
SETTLE_SECONDS = 60.0  # past this, an artifact without its event row is taken as it is
# The largest post awaiting_crosslink reads: Fossil 2.21's forum form sets no limit of its own, and a
# record's post is a few KiB; a post past this is taken as it is (as after SETTLE_SECONDS).
FORM_POST_BYTES = 1024 * 1024


def roll_back_hot_journal(path: Path, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> None:
    """Roll back what a cut-off write left in PATH's journal, as SQLite does on any read-write
    connection's first read (Fossil's next request would): the file as of its last commit.
    JournalWaiting when this process may not write it (a passing fault: the server will)."""
    try:
        writer = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=rw", uri=True, timeout=busy_timeout)
        try:
            writer.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            writer.close()
    except sqlite3.Error as error:
        raise JournalWaiting(f"{path}: a cut-off write's journal waits for its server: {error}") from error


class Repository(WorkReads, TagReads):
    """A read-only view of one repository file. Use as a context manager, or
    call close(). Every method reads the file as it is now."""

    def __init__(self, path: Path | str, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no repository file at {self.path}")
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        try:
            self._db = sqlite3.connect(uri, uri=True, timeout=busy_timeout, check_same_thread=False)
            self._db.execute("PRAGMA query_only=1")
        except sqlite3.Error as error:  # a locked file stays a passing fault: faults.py reads the cause
            raise RepositoryUnreadable(f"{self.path}: {error}") from error

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- plumbing shared with reads.py --------------------------------------

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        return self._execute(sql, params).fetchall()

    def _one(self, sql: str, params: tuple[object, ...] = ()) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._execute(sql, params).fetchone()
        return row

    def _execute(self, sql: str, params: tuple[object, ...]) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, params)
        except sqlite3.OperationalError as error:
            # A write cut off (the server killed, the host restarted) leaves a hot journal that a
            # read-only connection may not roll back, and nothing reads until one that may does.
            if getattr(error, "sqlite_errorname", "") != "SQLITE_READONLY_ROLLBACK":
                raise
            roll_back_hot_journal(self.path)
            return self._db.execute(sql, params)

    def _rid(self, hash_: str) -> int:
        row = self._one("SELECT rid FROM blob WHERE uuid=? AND size>=0", (hash_,))
        if row is None:
            raise UnknownArtifact(hash_)
        rid: int = row[0]
        return rid

    def _hash_of(self, rid: int | None) -> str | None:
        row = self._one("SELECT uuid FROM blob WHERE rid=?", (rid,)) if rid else None
        return row[0] if row else None

    # -- the repository itself ----------------------------------------------

    def copy_to(self, target: Path) -> None:
        """TARGET (a new file) made the repository as of one commit: SQLite's backup in one step, under
        a read lock held as long as copying the file takes (0.07 s for 29 MB), where a plain copy of
        the file could catch a commit half written (the git mirror's first copy, D49)."""
        copy = sqlite3.connect(str(target))
        try:
            self._db.backup(copy)
        finally:
            copy.close()

    def config(self, name: str) -> str | None:
        row = self._one("SELECT value FROM config WHERE name=?", (name,))
        return None if row is None or row[0] is None else str(row[0])

    def data_version(self) -> int:
        """SQLite's count of commits by other connections, as this connection saw them
        (`PRAGMA data_version`): unchanged after a request that only read the file, though
        Fossil opens it read-write for every request (fossil-facts.md)."""
        try:
            row = self._one("PRAGMA data_version")
        except sqlite3.Error as error:  # locked past the busy timeout: a passing fault (faults.py)
            raise RepositoryUnreadable(f"{self.path}: {error}") from error
        return int(row[0]) if row else 0

    @property
    def server_code(self) -> str:
        """This repository's own 40 hex digits: the node's name (C1, D29)."""
        return self.config("server-code") or ""

    @property
    def project_code(self) -> str:
        return self.config("project-code") or ""

    # -- artifacts ------------------------------------------------------------

    def resolve(self, prefix: str, *, min_digits: int = MIN_PREFIX) -> str:
        """The full hash that PREFIX (10+ hex digits) names (D11)."""
        if not (min_digits <= len(prefix) <= 64) or not set(prefix) <= _HEX:
            raise BadPrefix(f"{prefix!r}: not {min_digits} to 64 lowercase hex digits")
        # Range on the primary index; phantoms (size<0) are not artifacts we hold.
        matches: list[str] = [
            row[0]
            for row in self._rows(
                "SELECT uuid FROM blob WHERE uuid>=? AND uuid<? AND size>=0 LIMIT 2",
                (prefix, prefix + "g"),
            )
        ]
        if not matches:
            raise UnknownArtifact(prefix)
        if len(matches) > 1:
            raise AmbiguousPrefix(prefix, matches)
        return matches[0]

    def holding(self, hashes: list[str]) -> set[str]:
        """Those of HASHES this repository holds with their content."""
        held: set[str] = set()
        for start in range(0, len(hashes), 500):
            batch = hashes[start : start + 500]
            marks = ",".join("?" * len(batch))
            held.update(row[0] for row in self._rows(
                f"SELECT uuid FROM blob WHERE uuid IN ({marks}) AND size>=0", tuple(batch)))
        return held

    def size(self, hash_: str) -> int:
        """The artifact's size whole (`blob.size`), its content unread."""
        return size_of(self._db, self._rid(hash_))

    def artifact(self, hash_: str, limit: int = MAX_ARTIFACT_BYTES) -> bytes:
        """The bytes of the artifact with this full hash, checked against it;
        storage.TooLarge, nothing read, past LIMIT."""
        data = content(self._db, self._rid(hash_), limit)
        if not hash_matches(hash_, data):
            raise RepositoryError(f"{hash_}: stored content does not match its hash")
        return data

    def parsed(self, hash_: str) -> Artifact:
        return parse(self.artifact(hash_))

    def event_type(self, hash_: str) -> str | None:
        row = self._one("SELECT e.type FROM event e JOIN blob b ON b.rid=e.objid WHERE b.uuid=?", (hash_,))
        return row[0] if row else None

    def awaiting_crosslink(self, hash_: str) -> bool:
        """A forum post stored without its event row yet. Seen on 2.21: the forum
        form's blob (with its rcvid) is committed before its `event` and `forumpost`
        rows, so a reader that took it as a plain file would pass it over for good.
        Only a post shaped as that form writes it (manifest.is_form_post): sync, the
        tickets' form and check-ins crosslink in the blob's own transaction, so any
        other blob without its event row never gets one (a run's pushed `D`+`Z`).
        Its size comes first: a blob larger than FORM_POST_BYTES is no post the form
        wrote, and is never read (a run's 200 MB of zeros is 200 KB stored)."""
        if self.event_type(hash_) is not None:
            return False
        try:
            if self.size(hash_) > FORM_POST_BYTES:
                return False
            artifact = parse(self.artifact(hash_, FORM_POST_BYTES))
        except (ManifestError, UnicodeDecodeError, RepositoryError, StorageError):
            return False  # a file's content, or nothing readable: never crosslinked
        return is_form_post(artifact)

    def settled(self, receipt: Receipt) -> bool:
        """Whether Fossil has finished crosslinking what RECEIPT stored: the node's
        pass, the server's node and the receipts it serves hold back the rest."""
        return not self.unsettled(receipt)

    def unsettled(self, receipt: Receipt) -> list[str]:
        """What RECEIPT stored that Fossil is still crosslinking (none past SETTLE_SECONDS)."""
        if time.time() - receipt.time.timestamp() > SETTLE_SECONDS:
            return []
        return [stored.hash for stored in receipt.artifacts
                if stored.event_type is None and self.awaiting_crosslink(stored.hash)]

    def is_private(self, hash_: str) -> bool:
        return self._one("SELECT 1 FROM private WHERE rid=?", (self._rid(hash_),)) is not None

    def sender(self, hash_: str) -> Sender:
        """Who HASH reached this repository from (rcvfrom; fossil-facts.md)."""
        row = self._one(
            "SELECT u.login, r.ipaddr, r.mtime, r.rcvid FROM blob b"
            " LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid LEFT JOIN user u ON u.uid=r.uid"
            " WHERE b.uuid=? AND b.size>=0",
            (hash_,),
        )
        if row is None:
            raise UnknownArtifact(hash_)
        login, ipaddr, mtime, rcvid = row
        return Sender(login, ipaddr, julian_to_datetime(mtime) if mtime is not None else None, rcvid)

    # -- receipts (D26) --------------------------------------------------------

    def max_rcvid(self) -> int:
        """The newest receipt; its moment remembered, so the next reads after it scan no old blob."""
        return receipt_floor.newest_receipt(self._db, self._execute, str(self.path))

    def _span(self, alias: str, after: int, upto: int) -> tuple[str, tuple[object, ...]]:
        """ALIAS's artifacts of receipts AFTER < rcvid <= UPTO, as SQL and its parameters: above a rid
        floor when one is known (receipt_floor.py), so SQLite reads the newest rows, not every blob."""
        found = receipt_floor.floor(self._execute, str(self.path), after)
        if found is None:
            return f"{alias}.rcvid>? AND {alias}.rcvid<=?", (after, upto)
        return f"{alias}.rid>? AND {alias}.rcvid>? AND {alias}.rcvid<=?", (found, after, upto)

    def newest_receipt_besides(self, after: int, upto: int, hash_: str) -> int | None:
        """The newest receipt after AFTER, up to UPTO, that stored anything but
        HASH; None if none did (one scan: `blob.rcvid` has no index)."""
        span, params = self._span("blob", after, upto)
        row = self._one(f"SELECT max(rcvid) FROM blob WHERE {span} AND uuid<>?", (*params, hash_))
        return int(row[0]) if row and row[0] is not None else None

    def newest_tip_change(self, upto: int) -> int:
        """The newest receipt, up to UPTO, that brought a check-in or set a branch's or closing tag
        (a tip `fossil open` checks out may have moved then); -1 if none did."""
        row = self._one(
            "SELECT max(rcvid) FROM blob WHERE rcvid<=? AND (rid IN (SELECT objid FROM event WHERE type='ci')"
            " OR rid IN (SELECT x.srcid FROM tagxref x JOIN tag t ON t.tagid=x.tagid"
            " WHERE t.tagname IN ('branch', 'closed') OR t.tagname GLOB 'sym-*'))", (upto,))
        return int(row[0]) if row and row[0] is not None else -1

    def public_stored(self, after: int, upto: int) -> list[str]:
        """The artifacts received after AFTER up to UPTO that a clone gets:
        with content, not private, not shunned (one scan)."""
        span, params = self._span("blob", after, upto)
        return [row[0] for row in self._rows(
            f"SELECT uuid FROM blob WHERE {span} AND size>=0 AND rid NOT IN (SELECT rid FROM private)"
            " AND uuid NOT IN (SELECT uuid FROM shun)", params)]

    def larger_than(self, limit: int, after: int, upto: int) -> list[tuple[str, int, str | None, str]]:
        """(hash, size, sender, the sender's contact) of each artifact received after AFTER up to
        UPTO larger than LIMIT bytes whole and not shunned: `blob.size` only, no content (one scan)."""
        span, params = self._span("b", after, upto)
        return [(hash_, size, login, info or "") for hash_, size, login, info in self._rows(
            "SELECT b.uuid, b.size, u.login, u.info FROM blob b LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid"
            f" LEFT JOIN user u ON u.uid=r.uid WHERE {span} AND b.size>?"
            " AND b.uuid NOT IN (SELECT uuid FROM shun)", (*params, limit))]

    def shunned(self, hash_: str) -> bool:
        return self._one("SELECT 1 FROM shun WHERE uuid=?", (hash_,)) is not None

    def receipts_since(self, rcvid: int, *, kinds: tuple[str, ...] | None = None,
                       untyped_after: float | None = None) -> list[Receipt]:
        """Every receipt after RCVID, oldest first, with what each stored.
        Two queries whatever their number (`blob.rcvid` has no index: one
        scan for all, never one per receipt). Receipts first: Fossil commits
        a receipt with its blobs, so each one listed has all of its own.

        With KINDS (event types), only those artifacts are listed, and those
        with no event row yet in receipts received after UNTYPED_AFTER (Unix
        seconds: Fossil may still be crosslinking them); a receipt with
        nothing listed is left out. A pass reads years of receipts so."""
        return self._receipts(rcvid, None, kinds, untyped_after)

    def receipt(self, rcvid: int) -> Receipt | None:
        """Receipt RCVID, read again (a node's retry of one it could not handle, C4)."""
        found = self._receipts(rcvid - 1, rcvid)
        return found[0] if found else None

    def _receipts(self, after: int, upto: int | None, kinds: tuple[str, ...] | None = None,
                  untyped_after: float | None = None) -> list[Receipt]:
        receipts = self._rows("SELECT r.rcvid, u.login, r.ipaddr, r.mtime FROM rcvfrom r LEFT JOIN user u"
                              " ON u.uid=r.uid WHERE r.rcvid>? AND r.rcvid<=? ORDER BY r.rcvid",
                              (after, upto if upto is not None else 2**62))
        if not receipts:
            return []
        where = ""
        params: tuple[object, ...] = ()
        if kinds is not None:
            cutoff = (untyped_after or 0.0) / 86400.0 + 2440587.5  # Julian days (times.py)
            where = (f" AND (e.type IN ({','.join('?' * len(kinds))}) OR (e.type IS NULL AND b.rcvid IN"
                     " (SELECT rcvid FROM rcvfrom WHERE rcvid>? AND mtime>=?)))")
            params = (*kinds, after, cutoff)
        stored: dict[int, list[ReceivedArtifact]] = {}
        span, spanned = self._span("b", after, receipts[-1][0])
        for number, hash_, kind, private in self._rows(
                "SELECT b.rcvid, b.uuid, e.type, b.rid IN (SELECT rid FROM private) FROM blob b"
                f" LEFT JOIN event e ON e.objid=b.rid WHERE {span}" + where +
                " ORDER BY b.rcvid, b.rid", (*spanned, *params)):
            stored.setdefault(number, []).append(ReceivedArtifact(hash_, kind, bool(private)))
        return [Receipt(number, login, ipaddr, julian_to_datetime(mtime), tuple(stored.get(number, ())))
                for number, login, ipaddr, mtime in receipts if kinds is None or number in stored]

    # -- users and capabilities -------------------------------------------------

    def user(self, login: str) -> User:
        row = self._one("SELECT login, uid, cap, info FROM user WHERE login=?", (login,))
        if row is None:
            raise UnknownUser(login)
        return User(row[0], row[1], row[2] or "", row[3] or "")

    def users(self) -> list[User]:
        return [
            User(login, uid, cap or "", info or "")
            for login, uid, cap, info in self._rows("SELECT login, uid, cap, info FROM user ORDER BY uid")
        ]

    def effective_capabilities(self, login: str) -> frozenset[str]:
        """LOGIN's letters as Fossil expands them when it acts (capabilities.py)."""
        rows = {u.login: u.capabilities for u in self.users()}
        if login not in rows:
            raise UnknownUser(login)
        return capabilities.effective_capabilities(login, rows)

    def capabilities_now(self) -> Callable[[str | None], frozenset[str]]:
        """LOGIN → its effective letters, from one read of the user table: a
        pass asks it for the sender of every artifact it reads. A login not
        there (deleted since) holds nothing."""
        rows = {u.login: u.capabilities for u in self.users()}
        known: dict[str | None, frozenset[str]] = {}

        def of(login: str | None) -> frozenset[str]:
            if login not in known:
                known[login] = (capabilities.effective_capabilities(login, rows) if login is not None and login in rows
                                else frozenset())
            return known[login]
        return of

    def admins(self) -> frozenset[str]:
        """Every login holding admin or setup now (C1), from one read of the
        user table: the node asks it of every open run on each pass (D24)."""
        rows = {u.login: u.capabilities for u in self.users()}
        return frozenset(login for login in rows
                         if capabilities.holds_admin(capabilities.effective_capabilities(login, rows)))

    def holds_admin(self, login: str | None) -> bool:
        """Admin or setup now (C1): who may send a record or a stop."""
        if login is None:
            return False
        try:
            return capabilities.holds_admin(self.effective_capabilities(login))
        except UnknownUser:
            return False
