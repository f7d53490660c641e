"""Reading the work in a repository: forum threads, ticket changes, check-ins,
tag histories and wiki pages, each with its sender (F2, D21).

A mixin of `Repository` (repository.py), which owns the connection; these
methods only run its queries and parse its artifacts. Structure comes from
Fossil's own derived tables (forumpost, ticketchng, tagxref, event, plink),
read with one query per kind; text and claims from the cards of the posts and
changes asked for, which are short. A check-in's manifest is never decoded:
Fossil stores old ones as long delta chains, and its tables hold all a
reader needs (docs/node.md, 'On a real repository, the first change').
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ocx.fossil.artifacts import Checkin, Post, PostHead, Sender, TicketChange, WikiVersion
from ocx.fossil.errors import RepositoryError, WrongKind
from ocx.fossil.manifest import Artifact, parse
from ocx.fossil.storage import MAX_ARTIFACT_BYTES, TooLarge, hash_matches
from ocx.fossil.tag_reads import BOUNDED_CONTENT, artifact_bytes
from ocx.fossil.times import card_date, julian_to_datetime

COMMENT_FIELDS = ("icomment", "comment")  # web form's, and the CLI's `+comment`


# One row per post: its bytes, its thread, its place in it, and its receipt (F2).
_POST_ROWS = (
    f"SELECT b.uuid, b.rid, {BOUNDED_CONTENT}, b.size, d.srcid, rb.uuid, ib.uuid, pb.uuid, fp.fmtime,"
    " fp.fpid IN (SELECT rid FROM private), u.login, r.ipaddr, r.mtime, r.rcvid"
    " FROM forumpost fp JOIN blob b ON b.rid=fp.fpid LEFT JOIN delta d ON d.rid=b.rid"
    " LEFT JOIN blob rb ON rb.rid=fp.froot LEFT JOIN blob ib ON ib.rid=fp.firt LEFT JOIN blob pb ON pb.rid=fp.fprev"
    " LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid LEFT JOIN user u ON u.uid=r.uid")
_CHANGE_ROWS = (
    f"SELECT b.uuid, b.rid, {BOUNDED_CONTENT}, b.size, d.srcid, u.login, r.ipaddr, r.mtime, r.rcvid"
    " FROM ticketchng c JOIN blob b ON b.rid=c.tkt_rid LEFT JOIN delta d ON d.rid=b.rid"
    " LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid LEFT JOIN user u ON u.uid=r.uid")
_CHECKIN_ROWS = (
    "SELECT b.uuid, b.rid, e.type, e.user, e.comment, coalesce(e.omtime, e.mtime), u.login, r.ipaddr, r.mtime,"
    " r.rcvid, (SELECT x.value FROM tagxref x JOIN tag t ON t.tagid=x.tagid"
    "  WHERE t.tagname='branch' AND x.rid=b.rid AND x.tagtype>0)"
    " FROM blob b LEFT JOIN event e ON e.objid=b.rid LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid"
    " LEFT JOIN user u ON u.uid=r.uid")


def _sender(login: str | None, ipaddr: str | None, mtime: float | None, rcvid: int | None) -> Sender:
    return Sender(login, ipaddr, julian_to_datetime(mtime) if mtime is not None else None, rcvid)


def _among(column: str, logins: Iterable[str] | None) -> tuple[str, tuple[str, ...]]:
    """A WHERE clause keeping rows whose sender is one of LOGINS (all, for None)."""
    if logins is None:
        return "1", ()
    chosen = tuple(logins)
    return f"{column} IN ({','.join('?' * len(chosen))})" if chosen else "0", chosen


def _verified(hash_: str, data: bytes) -> bytes:
    if not hash_matches(hash_, data):
        raise RepositoryError(f"{hash_}: stored content does not match its hash")
    return data


class WorkReads:
    if TYPE_CHECKING:  # what the mixin uses of `Repository` (repository.py)
        _db: sqlite3.Connection

        def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]: ...

        def _one(self, sql: str, params: tuple[object, ...] = ()) -> tuple[Any, ...] | None: ...

        def _rid(self, hash_: str) -> int: ...

        def _span(self, alias: str, after: int, upto: int) -> tuple[str, tuple[object, ...]]: ...

        def artifact(self, hash_: str, limit: int = MAX_ARTIFACT_BYTES) -> bytes: ...

        def parsed(self, hash_: str) -> Artifact: ...

        def sender(self, hash_: str) -> Sender: ...

        def holds_admin(self, login: str | None) -> bool: ...

    # -- forum (D12, D9, D28) -----------------------------------------------

    def post(self, hash_: str) -> Post:
        found = self._posts("b.uuid=?", (hash_,)) if self._has_table("forumpost") else []
        if not found:
            raise WrongKind(f"{hash_}: not a forum post")
        return found[0]

    def thread(self, root: str) -> list[Post]:
        """Every post of the thread whose root (or any post) is ROOT, in the
        order this repository received them."""
        root_rid = self._rid(self.post(root).root)
        return self._posts("fp.froot=?", (root_rid,), "fp.fpid")

    def forum_posts(self, senders: Iterable[str] | None = None,
                    mentioning: tuple[bytes, ...] | None = None) -> list[Post]:
        """Every forum post of every thread (or only those SENDERS sent), in
        the order this repository received them. Only the posts asked for
        are decoded: a reader of messages asks for the senders who may send one.
        MENTIONING: only posts whose bytes hold one of these, found before a
        post is checked and parsed (a reader's cheap necessary condition,
        e.g. a server-code every message for its node holds)."""
        if not self._has_table("forumpost"):
            return []
        where, params = _among("u.login", senders)
        return self._posts(where, params, "b.rcvid, fp.fpid", mentioning)

    def post_heads_received(self, after: int, upto: int) -> dict[str, PostHead]:
        """The forum posts of receipts AFTER < rcvid <= UPTO, by hash: their
        place in their thread, from one query, with no content read (a pass
        reads a post's text only where it can matter)."""
        if not self._has_table("forumpost"):
            return {}
        span, params = self._span("b", after, upto)
        return {hash_: PostHead(hash_, root or hash_, edit_of) for hash_, root, edit_of in self._rows(
            "SELECT b.uuid, rb.uuid, pb.uuid FROM blob b JOIN forumpost fp ON fp.fpid=b.rid"
            " LEFT JOIN blob rb ON rb.rid=fp.froot LEFT JOIN blob pb ON pb.rid=fp.fprev"
            f" WHERE {span}", params)}

    def posts_received(self, after: int, upto: int, senders: Iterable[str]) -> dict[str, Post]:
        """The forum posts of receipts AFTER < rcvid <= UPTO that SENDERS sent, by hash, from one query."""
        if not self._has_table("forumpost"):
            return {}
        where, params = _among("u.login", senders)
        span, spanned = self._span("b", after, upto)
        return {post.hash: post for post in self._posts(f"{span} AND {where}", (*spanned, *params))}

    def change_tickets_received(self, after: int, upto: int) -> dict[str, str]:
        """The ticket (its K card's id) of each ticket change of receipts AFTER < rcvid <= UPTO."""
        if not self._has_table("ticketchng"):
            return {}
        span, params = self._span("b", after, upto)
        return dict(self._rows(
            "SELECT b.uuid, t.tkt_uuid FROM ticketchng c JOIN blob b ON b.rid=c.tkt_rid"
            f" JOIN ticket t ON t.tkt_id=c.tkt_id WHERE {span}", params))

    def _posts(self, where: str, params: tuple[object, ...], order: str = "fp.fpid",
               mentioning: tuple[bytes, ...] | None = None) -> list[Post]:
        posts = []
        for hash_, rid, stored, size, source, root, in_reply_to, edit_of, fmtime, private, *sent in self._rows(
                f"{_POST_ROWS} WHERE {where} ORDER BY {order}", params):
            try:
                data = artifact_bytes(self._db, rid, stored, source, size)
            except TooLarge:
                continue  # past the bound root reads (storage.py): no message, and never read
            if mentioning is not None and not any(wanted in data for wanted in mentioning):
                continue
            card = parse(_verified(hash_, data))
            posts.append(Post(
                hash=hash_, root=root or hash_, in_reply_to=in_reply_to, edit_of=edit_of,
                pending_moderation=bool(private), sender=_sender(*sent), user=card.user, title=card.text("H"),
                body=card.wiki or "", mimetype=card.text("N"), time=julian_to_datetime(fmtime)))
        return posts

    def _checked(self, hash_: str, rid: int, stored: bytes | None, source: int | None, size: int) -> bytes:
        return _verified(hash_, artifact_bytes(self._db, rid, stored, source, size))

    # -- tickets (D12) ----------------------------------------------------------

    def ticket_changes(self, ticket: str) -> list[TicketChange]:
        """Every change of TICKET (its full id, or 10+ leading digits), in the
        order this repository received them."""
        if not self._has_table("ticketchng"):
            return []
        return self._ticket_changes("c.tkt_id IN (SELECT tkt_id FROM ticket WHERE tkt_uuid>=? AND tkt_uuid<?)",
                                    (ticket, ticket + "g"), "c.tkt_rid")

    def all_ticket_changes(self, senders: Iterable[str] | None = None) -> list[TicketChange]:
        """Every change of every ticket (or only those SENDERS sent), in the
        order this repository received them."""
        if not self._has_table("ticketchng"):
            return []
        where, params = _among("u.login", senders)
        return self._ticket_changes(where, params, "b.rcvid, c.tkt_rid")

    def ticket_change(self, hash_: str) -> TicketChange:
        found = self._ticket_changes("b.uuid=?", (hash_,)) if self._has_table("ticketchng") else []
        if not found:  # not crosslinked as one: read its cards, which say
            found = [self._ticket_change(hash_, parse(self.artifact(hash_)), self.sender(hash_))]
        return found[0]

    def _ticket_changes(self, where: str, params: tuple[object, ...], order: str = "c.tkt_rid") -> list[TicketChange]:
        return [self._ticket_change(hash_, parse(self._checked(hash_, rid, stored, source, size)), _sender(*sent))
                for hash_, rid, stored, size, source, *sent in self._rows(
                    f"{_CHANGE_ROWS} WHERE {where} ORDER BY {order}", params)
                if size <= MAX_ARTIFACT_BYTES]  # past the bound root reads (storage.py): never read

    @staticmethod
    def _ticket_change(hash_: str, card: Artifact, sender: Sender) -> TicketChange:
        ticket = card.text("K")
        if ticket is None:
            raise WrongKind(f"{hash_}: not a ticket change")
        fields = card.ticket_fields
        comment = next((f for name in COMMENT_FIELDS for f in fields if f.name == name), None)
        return TicketChange(
            hash=hash_,
            ticket=ticket,
            sender=sender,
            user=card.user,
            fields=fields,
            comment=comment.value if comment else None,
            comment_appended=comment.append if comment else False,
            time=card_date(card.date),
        )

    # -- check-ins (V1, V2, D25): Fossil's own tables, never the manifest -------

    def checkin(self, hash_: str) -> Checkin:
        """A check-in as Fossil's tables hold it: its branch (tagxref), the
        user and comment written in it and its time (event: the U, C and D
        cards as Fossil read them), its parents (plink) and its sender."""
        return self.checkins([hash_])[hash_]

    def checkins(self, hashes: Iterable[str]) -> dict[str, Checkin]:
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, Checkin] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            for hash_, rid, kind, user, comment, mtime, *sent, branch in self._rows(
                    f"{_CHECKIN_ROWS} WHERE b.uuid IN ({','.join('?' * len(chunk))})", tuple(chunk)):
                if kind != "ci":
                    continue
                parents = tuple(p for (p,) in self._rows(
                    "SELECT b.uuid FROM plink p JOIN blob b ON b.rid=p.pid WHERE p.cid=?"
                    " ORDER BY p.isprim DESC, p.pid", (rid,)))
                found[hash_] = Checkin(hash=hash_, branch=branch, user=user, sender=_sender(*sent),
                                       comment=comment or "", parents=parents, time=julian_to_datetime(mtime))
        missing = [h for h in wanted if h not in found]
        if missing:
            raise WrongKind(f"{missing[0]}: not a check-in")
        return found

    def checkin_authors(self) -> set[tuple[str, str | None]]:
        """Each (user a check-in names, login that sent it) of every check-in: the user as its U card wrote
        it and as a `user` tag edits it (event.user, euser), the sender from rcvfrom (D21; None: none)."""
        rows = self._rows("SELECT DISTINCT e.user, e.euser, u.login FROM event e JOIN blob b ON b.rid=e.objid"
                          " LEFT JOIN rcvfrom r ON r.rcvid=b.rcvid LEFT JOIN user u ON u.uid=r.uid WHERE e.type='ci'")
        return {(str(named), sender) for user, edited, sender in rows for named in (user, edited) if named is not None}

    def branches_received(self, after: int, upto: int) -> dict[str, str | None]:
        """The branch of each check-in of receipts AFTER < rcvid <= UPTO (one query)."""
        span, params = self._span("b", after, upto)
        return dict(self._rows(
            "SELECT b.uuid, (SELECT x.value FROM tagxref x JOIN tag t ON t.tagid=x.tagid"
            "  WHERE t.tagname='branch' AND x.rid=b.rid AND x.tagtype>0)"
            f" FROM blob b JOIN event e ON e.objid=b.rid WHERE e.type='ci' AND {span}", params))

    def symbols_passed_on(self, hash_: str) -> frozenset[str]:
        """The `sym-` tags CHECKIN passes on to its children (propagating,
        tagxref's tagtype 2): the names Fossil's `update NAME` finds them by."""
        return frozenset(name for (name,) in self._rows(
            "SELECT t.tagname FROM tagxref x JOIN tag t ON t.tagid=x.tagid"
            " WHERE x.rid=? AND x.tagtype=2 AND t.tagname GLOB 'sym-*'", (self._rid(hash_),)))

    def branch_checkins(self, branch: str, newest: int | None = None) -> list[str]:
        """The check-ins whose branch is BRANCH (its `branch` tag), oldest
        first; only the NEWEST so many when given."""
        order, limit = ("DESC", f" LIMIT {int(newest)}") if newest else ("", "")
        found = [hash_ for (hash_,) in self._rows(
            "SELECT b.uuid FROM tagxref x JOIN tag t ON t.tagid=x.tagid JOIN blob b ON b.rid=x.rid"
            " JOIN event e ON e.objid=x.rid WHERE t.tagname='branch' AND x.value=? AND x.tagtype>0"
            f" AND e.type='ci' ORDER BY e.mtime {order}, b.rid {order}{limit}", (branch,))]
        return found[::-1] if newest else found

    def branch_size(self, branch: str) -> int:
        row = self._one(
            "SELECT count(*) FROM tagxref x JOIN tag t ON t.tagid=x.tagid JOIN event e ON e.objid=x.rid"
            " WHERE t.tagname='branch' AND x.value=? AND x.tagtype>0 AND e.type='ci'", (branch,))
        return int(row[0]) if row else 0  # count(*) answers one row

    # -- wiki (D14) ---------------------------------------------------------------

    def wiki_versions(self, name: str) -> list[WikiVersion]:
        """Every version of wiki page NAME, newest first (by its D card)."""
        versions = []
        for (hash_,) in self._rows(
            "SELECT b.uuid FROM tagxref x JOIN tag t ON t.tagid=x.tagid"
            " JOIN blob b ON b.rid=x.rid WHERE t.tagname=?"
            " ORDER BY x.mtime DESC, x.rid DESC",
            ("wiki-" + name,),
        ):
            try:
                card = self.parsed(hash_)
            except TooLarge:
                continue  # past the bound root reads (storage.py): never read
            versions.append(
                WikiVersion(
                    hash=hash_,
                    name=card.text("L") or name,
                    sender=self.sender(hash_),
                    user=card.user,
                    content=card.wiki or "",
                    mimetype=card.text("N"),
                    time=card_date(card.date),
                )
            )
        return versions

    def wiki_names(self, prefix: str, most: int) -> list[str]:
        """The names of at most MOST wiki pages whose name begins with PREFIX (`sandbox/`: the runner
        pages, D14), sorted: the release smoke's `node_check` reads each as the node would (D45)."""
        tag = "wiki-" + prefix  # compared exactly: LIKE would fold case and read % and _
        return [name[len("wiki-"):] for (name,) in self._rows(
            "SELECT tagname FROM tag WHERE substr(tagname, 1, ?) = ? ORDER BY tagname LIMIT ?",
            (len(tag), tag, int(most)))]

    def wiki_latest_by_admin(self, name: str) -> WikiVersion | None:
        """The newest version of page NAME whose SENDER holds admin or setup
        now (D14: only such a version counts); None if there is none."""
        return next(
            (v for v in self.wiki_versions(name) if self.holds_admin(v.sender.login)),
            None,
        )

    def _has_table(self, name: str) -> bool:
        # forumpost appears with the first post (fossil-facts.md "Forum posts").
        return self._one("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)) is not None
