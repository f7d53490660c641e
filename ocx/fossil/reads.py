"""Reading the work in a repository: forum threads, ticket changes, check-ins,
tag histories and wiki pages, each with its sender (F2, D21).

A mixin of `Repository` (repository.py), which owns the connection; these
methods only run its queries and parse its artifacts. Structure comes from
Fossil's own derived tables (forumpost, ticketchng, tagxref, event); text and
claims from the artifact's cards.
"""
from __future__ import annotations

from collections.abc import Iterable

from ocx.fossil.errors import WrongKind
from ocx.fossil.records import Checkin, Post, TagChange, TicketChange, WikiVersion
from ocx.fossil.times import card_date, julian_to_datetime

_SYMBOLIC = "sym-"
COMMENT_FIELDS = ("icomment", "comment")  # web form's, and the CLI's `+comment`


class WorkReads:
    # -- forum (D12, D9, D28) -----------------------------------------------

    def post(self, hash_: str) -> Post:
        row = self._one(
            "SELECT fp.fpid, fp.froot, fp.firt, fp.fprev, fp.fmtime,"
            " fp.fpid IN (SELECT rid FROM private)"
            " FROM forumpost fp JOIN blob b ON b.rid=fp.fpid WHERE b.uuid=?",
            (hash_,),
        ) if self._has_table("forumpost") else None
        if row is None:
            raise WrongKind(f"{hash_}: not a forum post")
        return self._post(hash_, *row[1:])

    def thread(self, root: str) -> list[Post]:
        """Every post of the thread whose root (or any post) is ROOT, in the
        order this repository received them."""
        root_rid = self._one(
            "SELECT froot FROM forumpost WHERE fpid=?", (self._rid(self.post(root).root),)
        )[0]
        return [
            self._post(hash_, *rest)
            for hash_, *rest in self._rows(
                "SELECT b.uuid, fp.froot, fp.firt, fp.fprev, fp.fmtime,"
                " fp.fpid IN (SELECT rid FROM private)"
                " FROM forumpost fp JOIN blob b ON b.rid=fp.fpid"
                " WHERE fp.froot=? ORDER BY fp.fpid",
                (root_rid,),
            )
        ]

    def forum_posts(self) -> list[Post]:
        """Every forum post of every thread, in the order this repository received them."""
        if not self._has_table("forumpost"):
            return []
        return [self._post(hash_, *rest) for hash_, *rest in self._rows(
            "SELECT b.uuid, fp.froot, fp.firt, fp.fprev, fp.fmtime, fp.fpid IN (SELECT rid FROM private)"
            " FROM forumpost fp JOIN blob b ON b.rid=fp.fpid ORDER BY b.rcvid, fp.fpid")]

    def _post(self, hash_, froot, firt, fprev, fmtime, private) -> Post:
        card = self.parsed(hash_)
        return Post(
            hash=hash_,
            root=self._hash_of(froot) or hash_,
            in_reply_to=self._hash_of(firt),
            edit_of=self._hash_of(fprev),
            pending_moderation=bool(private),
            sender=self.sender(hash_),
            user=card.user,
            title=card.text("H"),
            body=card.wiki or "",
            mimetype=card.text("N"),
            time=julian_to_datetime(fmtime),
        )

    # -- tickets (D12) ----------------------------------------------------------

    def ticket_changes(self, ticket: str) -> list[TicketChange]:
        """Every change of TICKET (its full id, or 10+ leading digits), in the
        order this repository received them."""
        rows = self._rows(
            "SELECT b.uuid FROM ticketchng c JOIN ticket t ON t.tkt_id=c.tkt_id"
            " JOIN blob b ON b.rid=c.tkt_rid WHERE t.tkt_uuid>=? AND t.tkt_uuid<?"
            " ORDER BY c.tkt_rid",
            (ticket, ticket + "g"),
        ) if self._has_table("ticketchng") else []
        return [self.ticket_change(hash_) for (hash_,) in rows]

    def all_ticket_changes(self) -> list[TicketChange]:
        """Every change of every ticket, in the order this repository received them."""
        rows = self._rows("SELECT b.uuid FROM ticketchng c JOIN blob b ON b.rid=c.tkt_rid ORDER BY b.rcvid, c.tkt_rid"
                          ) if self._has_table("ticketchng") else []
        return [self.ticket_change(hash_) for (hash_,) in rows]

    def ticket_change(self, hash_: str) -> TicketChange:
        card = self.parsed(hash_)
        ticket = card.text("K")
        if ticket is None:
            raise WrongKind(f"{hash_}: not a ticket change")
        fields = card.ticket_fields
        comment = next((f for name in COMMENT_FIELDS for f in fields if f.name == name), None)
        return TicketChange(
            hash=hash_,
            ticket=ticket,
            sender=self.sender(hash_),
            user=card.user,
            fields=fields,
            comment=comment.value if comment else None,
            comment_appended=comment.append if comment else False,
            time=card_date(card.date),
        )

    # -- check-ins and their tags (V1, V2, D25) ---------------------------------

    def checkin(self, hash_: str) -> Checkin:
        if self.event_type(hash_) != "ci":
            raise WrongKind(f"{hash_}: not a check-in")
        card = self.parsed(hash_)
        branch = self._one(
            "SELECT x.value FROM tagxref x JOIN tag t ON t.tagid=x.tagid"
            " WHERE t.tagname='branch' AND x.rid=? AND x.tagtype>0",
            (self._rid(hash_),),
        )
        return Checkin(
            hash=hash_,
            branch=branch[0] if branch else None,
            user=card.user,
            sender=self.sender(hash_),
            comment=card.comment or "",
            parents=card.parents,
            time=card_date(card.date),
        )

    def symbols_passed_on(self, hash_: str) -> frozenset[str]:
        """The `sym-` tags CHECKIN passes on to its children (propagating,
        tagxref's tagtype 2): the names Fossil's `update NAME` finds them by."""
        return frozenset(name for (name,) in self._rows(
            "SELECT t.tagname FROM tagxref x JOIN tag t ON t.tagid=x.tagid"
            " WHERE x.rid=? AND x.tagtype=2 AND t.tagname GLOB 'sym-*'", (self._rid(hash_),)))

    def branch_checkins(self, branch: str) -> list[str]:
        """The check-ins whose branch is BRANCH (its `branch` tag), oldest first."""
        return [hash_ for (hash_,) in self._rows(
            "SELECT b.uuid FROM tagxref x JOIN tag t ON t.tagid=x.tagid JOIN blob b ON b.rid=x.rid"
            " JOIN event e ON e.objid=x.rid WHERE t.tagname='branch' AND x.value=? AND x.tagtype>0"
            " AND e.type='ci' ORDER BY e.mtime, b.rid", (branch,))]

    def tag_history(self, checkin: str, names: Iterable[str] | None = None) -> list[TagChange]:
        """EVERY change ever made to a tag on CHECKIN, not only the one Fossil
        shows (tagxref keeps one row, chosen by D card time): the check-in's
        own T cards (target `*`), then the T cards of every tag-change artifact
        (event `g`) that target it, in the order this repository received them.
        Reads every `g` artifact: the cost grows with the repository's tags."""
        return self.tag_histories([checkin], names)[checkin]

    def tag_histories(self, checkins: Iterable[str], names: Iterable[str] | None = None) -> dict[str, list[TagChange]]:
        """`tag_history` of each of CHECKINS, reading every `g` artifact once
        for all of them (a queue asks for a whole branch)."""
        wanted = None if names is None else frozenset(names)
        histories: dict[str, list[TagChange]] = {checkin: [] for checkin in checkins}
        # (artifact, the target its T cards use): a check-in's own cards say `*`.
        sources = [(checkin, "*") for checkin in histories]
        sources += [(hash_, None) for (hash_,) in self._rows(
            "SELECT b.uuid FROM event e JOIN blob b ON b.rid=e.objid WHERE e.type='g' ORDER BY b.rcvid, b.rid")]
        for artifact, own_target in sources:
            card = self.parsed(artifact)
            for tag in card.tags:
                name = tag.name.removeprefix(_SYMBOLIC)
                target = artifact if own_target else tag.target
                if tag.target != (own_target or target) or target not in histories:
                    continue
                if wanted is not None and name not in wanted:
                    continue
                histories[target].append(TagChange(
                    artifact=artifact, target=target, name=name, op=tag.op, value=tag.value,
                    sender=self.sender(artifact), user=card.user, time=card_date(card.date)))
        return histories

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
            card = self.parsed(hash_)
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
