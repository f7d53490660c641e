"""From the repository's receipts to the plain facts `decide` takes (F2, D26).

USER is always the sender from rcvfrom, never the U card (C3). A receipt
holds whatever one sync or one web form stored; only forum posts, ticket
changes and check-ins can be messages or deliveries.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypedDict

from ..fossil.artifacts import Post, PostHead, Receipt, ReceivedArtifact
from ..fossil.repository import Repository
from ..protocol.answers import answers_record
from ..protocol.decide import CHANGE, CHECKIN, OTHER, POST, Arrival, NodeFacts, may_act
from ..protocol.messages import Response, message_in

_KINDS = {"f": POST, "t": CHANGE, "ci": CHECKIN}


RECROSSLINK_SECONDS = 600.0  # a receipt older than this was crosslinked long before we read it
QUIET_AFTER_SECONDS = 3600.0  # an older post that can do nothing is neither read nor logged again
BACKLOG = 1000  # nor one read among more receipts than this at once (a lost mark, a node long down)
KINDS = tuple(_KINDS)  # the event types that can be messages or deliveries


class _Received(TypedDict):
    """What every Arrival of a receipt's artifact holds, whatever its kind."""

    hash: str
    kind: str
    sender: str | None
    sender_capabilities: frozenset[str]
    received: float
    rcvid: int
    pending_moderation: bool


class ReceiptReader:
    """The facts of every artifact in a run of receipts, read with one query
    per kind for all of them (a pass after a lost mark reads the whole
    history: 30,000 receipts must not cost 30,000 queries of each kind), and
    each login's letters from one read of the user table. A post or ticket
    change's text is read only when `decide` could act on it (decide.may_act)
    or it is recent and read with few others, so that why it did nothing is
    logged (intake.act)."""

    def __init__(self, repository: Repository, receipts: list[Receipt],
                 capabilities: Callable[[str | None], frozenset[str]] | None = None):
        self.repository = repository
        self.span = (receipts[0].rcvid - 1, receipts[-1].rcvid) if receipts else (0, 0)
        self.capabilities = capabilities or repository.capabilities_now()
        self.backlog = len(receipts) > BACKLOG
        # Each read once, for all the receipts, when first needed.
        self._heads: dict[str, PostHead] | None = None
        self._tickets: dict[str, str] | None = None
        self._branches: dict[str, str | None] | None = None
        self._entitled: dict[str, Post] | None = None

    def _branch_of(self) -> dict[str, str | None]:
        if self._branches is None:
            self._branches = self.repository.branches_received(*self.span)
        return self._branches

    def _place_of(self, kind: str, hash_: str) -> tuple[str, str | None] | None:
        """A post's thread root and what it edits, or a change's ticket; None when its receipts' one
        query of its kind has none."""
        if kind == POST:
            if self._heads is None:
                self._heads = self.repository.post_heads_received(*self.span)
            head = self._heads.get(hash_)
            return (head.root, head.edit_of) if head is not None else None
        if self._tickets is None:
            self._tickets = self.repository.change_tickets_received(*self.span)
        ticket = self._tickets.get(hash_)
        return (ticket, None) if ticket is not None else None

    def _entitled_posts(self, facts: NodeFacts | None) -> dict[str, Post]:
        """Whole, from one query: the posts of those who may send a message that
        counts (admins, the node user), whose text a pass reads in any case."""
        if self._entitled is None:
            senders = self.repository.admins() | ({facts.node_user} if facts else set())
            self._entitled = self.repository.posts_received(*self.span, senders)
        return self._entitled

    def arrival(self, receipt: Receipt, stored: ReceivedArtifact, facts: NodeFacts | None = None) -> Arrival | None:
        """What `decide` takes of STORED; None when it can be neither message
        nor delivery (a file, a tag change, a wiki page: module doc), or when,
        old, it could not make decide act given FACTS (decide.may_act)."""
        age = time.time() - receipt.time.timestamp()
        event_type = stored.event_type
        if event_type is None and age < RECROSSLINK_SECONDS:
            # Read again: the receipt's list may predate Fossil's crosslinking (Repository.settled).
            event_type = self.repository.event_type(stored.hash)
        kind = _KINDS.get(event_type or "", OTHER)
        if kind == OTHER:
            return None
        if stored.private and not self.repository.holding([stored.hash]):
            return None  # held for moderation: a node elsewhere's clone never gets it, and it is no message (D28)
        base = _Received(hash=stored.hash, kind=kind, sender=receipt.sender,
                         sender_capabilities=self.capabilities(receipt.sender),
                         received=receipt.time.timestamp(), rcvid=receipt.rcvid, pending_moderation=stored.private)
        if kind == CHECKIN:
            branches = self._branch_of()
            branch = branches[stored.hash] if stored.hash in branches else self.repository.checkin(stored.hash).branch
            return Arrival(**base, branch=branch)
        known = self._place_of(kind, stored.hash)
        if known is not None and facts is not None and (self.backlog or age >= QUIET_AFTER_SECONDS):
            place, edit_of = known
            if not may_act(Arrival(**base, place=place, edit_of=edit_of), facts):
                return None  # its text cannot matter: not read
        if kind == POST:
            post = self._entitled_posts(facts).get(stored.hash) or self.repository.post(stored.hash)
            return Arrival(**base, text=post.body, place=post.root, edit_of=post.edit_of)
        change = self.repository.ticket_change(stored.hash)
        return Arrival(**base, text=change.comment or "", place=change.ticket)


def responses_in_place(repository: Repository, place_kind: str, place: str) -> list[tuple[Response, str | None, float]]:
    """Every response message in a place, with its sender and receipt time (C4, D31)."""
    if place_kind == "thread":
        texts = [(p.body, p.sender.login, p.sender.time, p.edit_of, p.pending_moderation)
                 for p in repository.thread(place)]
    else:
        texts = [(c.comment or "", c.sender.login, c.sender.time, None, False)
                 for c in repository.ticket_changes(place)]
    found = []
    for text, sender, sent, edit_of, pending in texts:
        response = message_in(text) if edit_of is None and not pending else None
        if isinstance(response, Response):
            found.append((response, sender, sent.timestamp() if sent else 0.0))
    return found


def answer_in_place(repository: Repository, place_kind: str, place: str, record_hash: str, *, node: str,
                    node_user: str, received: float, wall_seconds: int) -> Response | None:
    """The response that answers RECORD_HASH, if one was written: the node
    user's, or an admin's `lost` after the record's receipt plus its wall (D31)."""
    for response, sender, sent in responses_in_place(repository, place_kind, place):
        if response.node == node and answers_record(
                response, record_hash, sender, node_user=node_user, holds_admin=repository.holds_admin,
                received=sent, record_received=received, wall_seconds=wall_seconds):
            return response
    return None
