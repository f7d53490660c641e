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
Every one of those is read: a sender's verdicts stand per objective (D25),
so no newer setting tells that an older one, against another objective, is
replaced, and reading stops early nowhere.

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

from ocx.fossil.artifacts import Sender, TagChange
from ocx.fossil.manifest import ManifestError, parse
from ocx.fossil.storage import MAX_ARTIFACT_BYTES, StorageError, TooLarge, content, decompress, hash_matches
from ocx.fossil.times import card_date, julian_to_datetime

SYMBOLIC = "sym-"
_PREFIX = 10  # the shortest run Fossil writes in a `g` comment (its `%S`)
_HEX_RUN = re.compile(rf"[0-9a-f]{{{_PREFIX},64}}")
# Each `g` event with its receipt and sender, no content. `run`: the hex run after a comment's one `[`
# (Fossil's own form names its one target there), NULL when the comment has any other form.
_SIMPLE = (f"length(e.comment) - length(replace(e.comment, '[', '')) = 1"
           f" AND substr(e.comment, instr(e.comment, '[') + 1, {_PREFIX + 1}) GLOB '{'[0-9a-f]' * _PREFIX}*'")
_RUN = f"substr(e.comment, instr(e.comment, '[') + 1, {_PREFIX})"
_G_EVENTS = (
    f"SELECT e.objid, r.rcvid, u.login, CASE WHEN {_SIMPLE} THEN {_RUN} END, e.comment"
    " FROM event e JOIN blob b ON b.rid=e.objid LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid"
    " LEFT JOIN user u ON u.uid=r.uid WHERE e.type='g'")
_OPS = {0: "-", 1: "+", 2: "*"}  # tagxref.tagtype
_BATCH = 500  # SQLite's variable limit is far above; keeps statements short


# A row's content, read only when `blob.size` is within the bound (storage.py): a run's large blob
# never even comes into memory compressed.
BOUNDED_CONTENT = f"CASE WHEN b.size BETWEEN 0 AND {MAX_ARTIFACT_BYTES} THEN b.content END"


def artifact_bytes(connection: sqlite3.Connection, rid: int, stored: bytes | None, source: int | None,
                   size: int) -> bytes:
    """A blob's bytes from a row already read (its BOUNDED_CONTENT and `blob.size`): whole, or
    through its delta chain; TooLarge past the bound."""
    if size > MAX_ARTIFACT_BYTES:
        raise TooLarge(f"blob {rid} is {size} bytes, past the bound of {MAX_ARTIFACT_BYTES}")
    if stored is not None and source is None:
        return decompress(stored)
    return content(connection, rid)


class TagReads:
    if TYPE_CHECKING:  # what the mixin uses of `Repository` (repository.py)
        _db: sqlite3.Connection

        def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]: ...

        def _one(self, sql: str, params: tuple[object, ...] = ()) -> tuple[Any, ...] | None: ...

    def tag_history(self, checkin: str, names: Iterable[str] | None = None) -> list[TagChange]:
        """EVERY change made to a tag on CHECKIN, not only the one Fossil shows:
        the check-in's own T cards (target `*`), then the T cards of every
        tag-change artifact (event `g`) that targets it, in the order this
        repository received them."""
        return self.tag_histories([checkin], names)[checkin]

    def checkins_tagged(self, names: Iterable[str]) -> list[str]:
        """The check-ins (full hashes) on which a tag of NAMES was ever set or cancelled, as
        Fossil's tagxref holds them: which ones a reader of those tags needs to look at."""
        wanted = sorted({name for given in names for name in (given, SYMBOLIC + given)})  # raw, or `tag add`'s
        if not wanted:
            return []
        marks = ", ".join("?" * len(wanted))
        rows = self._rows(f"SELECT DISTINCT blob.uuid FROM tagxref JOIN tag ON tag.tagid=tagxref.tagid"
                          f" JOIN blob ON blob.rid=tagxref.rid JOIN event ON event.objid=tagxref.rid"
                          f" WHERE tag.tagname IN ({marks}) AND event.type='ci' ORDER BY blob.uuid", tuple(wanted))
        return [str(row[0]) for row in rows]

    def tag_histories(self, checkins: Iterable[str], names: Iterable[str] | None = None) -> dict[str, list[TagChange]]:
        """`tag_history` of each of CHECKINS (full hashes), reading only the `g`
        artifacts that touch them (module doc)."""
        return self._histories(checkins, names)

    def _histories(self, checkins: Iterable[str], names: Iterable[str] | None) -> dict[str, list[TagChange]]:
        wanted = None if names is None else frozenset(names)
        histories: dict[str, list[TagChange]] = {checkin: [] for checkin in checkins}
        if not histories:
            return histories
        for checkin, own in self._own_tags_of(list(histories), wanted).items():
            histories[checkin] += own
        by_prefix: dict[str, list[str]] = {}
        for checkin in histories:
            by_prefix.setdefault(checkin[:_PREFIX], []).append(checkin)
        found = [(rcvid or 0, objid, index, change) for objid, rcvid, _, _ in self._g_candidates(by_prefix)
                 for index, change in enumerate(self._changes_of(objid, histories, wanted))]
        found.sort(key=lambda entry: entry[:3])  # the order this repository received them
        for *_, change in found:
            histories[change.target].append(change)
        return histories

    def _g_candidates(self, by_prefix: dict[str, list[str]]) -> list[tuple[int, int | None, str | None, str | None]]:
        """(objid, rcvid, sender, run) of each `g` artifact that may touch a
        check-in of BY_PREFIX, newest receipt first: its comment names one of
        them, or has a form we do not read (module doc). SQLite picks Fossil's
        own form; other comments go through the regex here."""
        prefixes = sorted(by_prefix)
        if len(prefixes) <= _BATCH:
            rows = self._rows(f"{_G_EVENTS} AND (NOT ({_SIMPLE}) OR {_RUN} IN ({','.join('?' * len(prefixes))}))",
                              tuple(prefixes))
        else:  # a whole long branch: one scan, chosen here
            rows = self._rows(_G_EVENTS)
        chosen = set(prefixes)
        candidates = [(objid, rcvid, login, run) for objid, rcvid, login, run, comment in rows
                      if (run in chosen if run is not None else _may_touch(comment or "", chosen))]
        candidates.sort(key=lambda row: (row[1] or 0, row[0]), reverse=True)
        return candidates

    def _changes_of(self, rid: int, histories: dict[str, list[TagChange]],
                    wanted: frozenset[str] | None) -> list[TagChange]:
        """The T cards of `g` artifact RID on HISTORIES' check-ins, of WANTED names, in card order."""
        row = self._one(
            f"SELECT b.uuid, {BOUNDED_CONTENT}, b.size, d.srcid, u.login, r.ipaddr, r.mtime, r.rcvid, r.uid"
            " FROM blob b"
            " LEFT JOIN delta d ON d.rid=b.rid LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid"
            " LEFT JOIN user u ON u.uid=r.uid WHERE b.rid=?", (rid,))
        if row is None:
            return []
        hash_, stored, size, source, login, ipaddr, mtime, rcvid, uid = row
        try:
            data = artifact_bytes(self._db, rid, stored, source, size)
            if not hash_matches(hash_, data):
                return []  # damaged: Fossil would not have crosslinked it either
            card = parse(data)
            tags, when = card.tags, card_date(card.date)
        except (StorageError, ManifestError, UnicodeDecodeError, ValueError):
            return []
        if when is None:
            return []  # a control artifact has a D card, or Fossil would not have crosslinked it
        sender = Sender(login, ipaddr, julian_to_datetime(mtime) if mtime is not None else None, rcvid, uid)
        found = []
        for tag in tags:
            name = tag.name.removeprefix(SYMBOLIC)
            if tag.target in histories and (wanted is None or name in wanted):
                found.append(TagChange(artifact=hash_, target=tag.target, name=name, op=tag.op,
                                       value=tag.value, sender=sender, user=card.user, time=when))
        return found

    def _own_tags_of(self, checkins: list[str], wanted: frozenset[str] | None) -> dict[str, list[TagChange]]:
        """Each check-in's own T cards that Fossil still shows (module doc), by tag name; one query a batch."""
        found: dict[str, list[TagChange]] = {}
        for start in range(0, len(checkins), _BATCH):
            chunk = checkins[start:start + _BATCH]
            for hash_, user, mtime, login, ipaddr, received, rcvid, uid, tagname, tagtype, value in self._rows(
                    "SELECT b.uuid, e.user, coalesce(e.omtime, e.mtime), u.login, r.ipaddr, r.mtime, r.rcvid, r.uid,"
                    " t.tagname, x.tagtype, x.value FROM blob b JOIN event e ON e.objid=b.rid"
                    " JOIN tagxref x ON x.rid=b.rid AND x.srcid=b.rid JOIN tag t ON t.tagid=x.tagid"
                    " LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid LEFT JOIN user u ON u.uid=r.uid"
                    f" WHERE b.uuid IN ({','.join('?' * len(chunk))}) ORDER BY b.uuid, t.tagname", tuple(chunk)):
                name = tagname.removeprefix(SYMBOLIC)
                if wanted is None or name in wanted:
                    sender = Sender(login, ipaddr, julian_to_datetime(received) if received is not None else None,
                                    rcvid, uid)
                    found.setdefault(hash_, []).append(TagChange(
                        artifact=hash_, target=hash_, name=name, op=_OPS.get(tagtype, "+"), value=value,
                        sender=sender, user=user, time=julian_to_datetime(mtime)))
        return found


def _may_touch(comment: str, prefixes: set[str] | frozenset[str]) -> bool:
    runs = _HEX_RUN.findall(comment)
    return not runs or any(run[:_PREFIX] in prefixes for run in runs)
