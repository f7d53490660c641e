"""Every change of a tag on given check-ins, with its sender (V2, D25), at
the cost of the check-ins asked about, not of the repository's history.

A mixin of `Repository` (repository.py). Fossil's `tagxref` keeps one
current row per tag and check-in (chosen by D card time), so the history is
in the T cards of the tag-change artifacts (event `g`). Which `g` artifacts
touch which check-in is not indexed by Fossil, but each `g` event's comment,
which Fossil writes from the artifact's own T cards, names every target's
first hex digits (2.21: `Edit [1bc63dda03c8a840|1bc63dda03]: Add tag
"audited" …`). That comment only chooses which artifacts to read: an
artifact whose comment names a wanted check-in, or names no hex run at all
(a format we do not know), is decoded and its T cards decide; nothing is
taken from the comment itself. So the cost is one scan of short `g` event
rows (no content) plus the artifacts that do touch the check-ins shown.

A check-in's own T cards (its branch at `commit --branch`, a `--tag`) are
read from `tagxref` rows whose source is the check-in itself: Fossil keeps
them while no later change replaced them, and never needs the check-in's
manifest, which old check-ins store as long delta chains.
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ocx.fossil.manifest import ManifestError, parse
from ocx.fossil.artifacts import Sender, TagChange
from ocx.fossil.storage import StorageError, content, decompress, hash_matches
from ocx.fossil.times import card_date, julian_to_datetime

SYMBOLIC = "sym-"
_PREFIX = 10  # the shortest run Fossil writes in a `g` comment (its `%S`)
_HEX_RUN = re.compile(r"[0-9a-f]{%d,64}" % _PREFIX)
_G_EVENTS = (
    f"SELECT objid, substr(comment, instr(comment, '[') + 1, {_PREFIX}),"
    f" length(comment) - length(replace(comment, '[', '')) = 1"
    f" AND substr(comment, instr(comment, '[') + 1, {_PREFIX + 1}) GLOB '{'[0-9a-f]' * _PREFIX}*',"
    " comment FROM event WHERE type='g'")
_OPS = {0: "-", 1: "+", 2: "*"}  # tagxref.tagtype
_BATCH = 500  # SQLite's variable limit is far above; keeps statements short


def artifact_bytes(connection, rid: int, stored: bytes | None, source: int | None) -> bytes:
    """A blob's bytes from a row already read: whole, or through its delta chain."""
    if stored is not None and source is None:
        return decompress(stored)
    return content(connection, rid)


class TagReads:
    if TYPE_CHECKING:  # what the mixin uses of `Repository` (repository.py)
        _db: sqlite3.Connection

        def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...

        def _one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None: ...

        def sender(self, hash_: str) -> Sender: ...

    def tag_history(self, checkin: str, names: Iterable[str] | None = None) -> list[TagChange]:
        """EVERY change made to a tag on CHECKIN, not only the one Fossil shows:
        the check-in's own T cards (target `*`), then the T cards of every
        tag-change artifact (event `g`) that targets it, in the order this
        repository received them."""
        return self.tag_histories([checkin], names)[checkin]

    def tag_histories(self, checkins: Iterable[str], names: Iterable[str] | None = None) -> dict[str, list[TagChange]]:
        """`tag_history` of each of CHECKINS (full hashes), reading only the `g`
        artifacts that touch them (module doc)."""
        wanted = None if names is None else frozenset(names)
        histories: dict[str, list[TagChange]] = {checkin: [] for checkin in checkins}
        if not histories:
            return histories
        for checkin in histories:
            histories[checkin] += self._own_tags(checkin, wanted)
        prefixes = {checkin[:_PREFIX] for checkin in histories}
        # Short rows, no content: a comment naming a wanted check-in, or no hex run at all (module doc).
        # SQLite cuts out the run after a comment's one `[` (Fossil's own form); others go through the regex.
        candidates = [objid for objid, run, simple, comment in self._rows(_G_EVENTS)
                      if (run in prefixes if simple else _may_touch(comment or "", prefixes))]
        rows = []
        for start in range(0, len(candidates), _BATCH):
            chunk = candidates[start:start + _BATCH]
            rows += self._rows(
                "SELECT b.rid, b.uuid, b.content, d.srcid, u.login, r.ipaddr, r.mtime, r.rcvid FROM blob b"
                " LEFT JOIN delta d ON d.rid=b.rid LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid"
                f" LEFT JOIN user u ON u.uid=r.uid WHERE b.rid IN ({','.join('?' * len(chunk))})", tuple(chunk))
        rows.sort(key=lambda row: (row[7] or 0, row[0]))  # the order this repository received them
        for change in self._changes_in(rows, histories, wanted):
            histories[change.target].append(change)
        return histories

    def _changes_in(self, rows, histories: dict[str, list[TagChange]], wanted) -> list[TagChange]:
        found = []
        for rid, hash_, stored, source, login, ipaddr, mtime, rcvid in rows:
            try:
                data = artifact_bytes(self._db, rid, stored, source)
                if not hash_matches(hash_, data):
                    continue  # damaged: Fossil would not have crosslinked it either
                card = parse(data)
                tags, when = card.tags, card_date(card.date)
            except (StorageError, ManifestError, UnicodeDecodeError, ValueError):
                continue
            if when is None:
                continue  # a control artifact has a D card, or Fossil would not have crosslinked it
            sender = Sender(login, ipaddr, julian_to_datetime(mtime) if mtime is not None else None, rcvid)
            for tag in tags:
                name = tag.name.removeprefix(SYMBOLIC)
                if tag.target in histories and (wanted is None or name in wanted):
                    found.append(TagChange(artifact=hash_, target=tag.target, name=name, op=tag.op,
                                           value=tag.value, sender=sender, user=card.user,
                                           time=when))
        return found

    def _own_tags(self, checkin: str, wanted) -> list[TagChange]:
        """The check-in's own T cards that Fossil still shows (module doc)."""
        row = self._one("SELECT b.rid, e.user, coalesce(e.omtime, e.mtime) FROM blob b"
                        " JOIN event e ON e.objid=b.rid WHERE b.uuid=?", (checkin,))
        if row is None:
            return []
        rid, user, mtime = row
        changes, sender = [], self.sender(checkin)
        for tagname, tagtype, value in self._rows(
                "SELECT t.tagname, x.tagtype, x.value FROM tagxref x JOIN tag t ON t.tagid=x.tagid"
                " WHERE x.rid=? AND x.srcid=? ORDER BY t.tagname", (rid, rid)):
            name = tagname.removeprefix(SYMBOLIC)
            if wanted is None or name in wanted:
                changes.append(TagChange(artifact=checkin, target=checkin, name=name, op=_OPS.get(tagtype, "+"),
                                         value=value, sender=sender, user=user,
                                         time=julian_to_datetime(mtime)))
        return changes


def _may_touch(comment: str, prefixes: set[str]) -> bool:
    runs = _HEX_RUN.findall(comment)
    return not runs or any(run[:_PREFIX] in prefixes for run in runs)
