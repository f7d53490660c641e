"""What the repository reader returns: frozen artifacts (posts, ticket changes,
check-ins, tag changes, wiki versions), receipts and users; no behaviour.

`sender` is always who the artifact reached this repository from (rcvfrom,
F2/D21); `user` is the U card, a claim made by the writer's clone.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ocx.fossil.manifest import TicketField


@dataclass(frozen=True)
class Sender:
    """The receipt an artifact arrived in. `login` is None when no receipt
    names a user (e.g. made by `fossil rebuild`), or when the receipt's
    user was deleted (`uid` then names a user row that is gone)."""

    login: str | None
    ipaddr: str | None  # None for a local CLI write on the repository file
    time: datetime | None
    rcvid: int | None
    # rcvfrom.uid, where read: Fossil gives a deleted user's uid to the next
    # login made, so a uid names a sender no better than the login it has now.
    uid: int | None = None


@dataclass(frozen=True)
class ReceivedArtifact:
    hash: str
    event_type: str | None  # event.type: ci, f, g, t, w, e; None for files, clusters
    private: bool  # held for moderation, or a private branch (D28)


@dataclass(frozen=True)
class Receipt:
    """One receiving transaction (a sync, a web form) and what it stored (D26)."""

    rcvid: int
    sender: str | None
    ipaddr: str | None
    time: datetime
    artifacts: tuple[ReceivedArtifact, ...]


@dataclass(frozen=True)
class User:
    login: str
    uid: int
    capabilities: str  # user.cap as written; see effective_capabilities
    contact: str


@dataclass(frozen=True)
class Post:
    hash: str
    root: str  # the thread's root post (D12: its place)
    in_reply_to: str | None
    edit_of: str | None  # D9: an edit is never a message
    pending_moderation: bool  # D28: never a message, never a delivery
    sender: Sender
    user: str | None
    title: str | None  # H card: a root post (or an edit of one) only
    body: str
    mimetype: str | None
    time: datetime


@dataclass(frozen=True)
class PostHead:
    """A post's place in its thread, from Fossil's tables, without its cards read."""

    hash: str
    root: str
    edit_of: str | None


@dataclass(frozen=True)
class TicketChange:
    hash: str
    ticket: str  # the K card: the ticket's id
    sender: Sender
    user: str | None
    fields: tuple[TicketField, ...]  # every J card, in order
    comment: str | None  # D7: the text of `icomment`/`comment` it sets or appends
    comment_appended: bool
    time: datetime | None  # its D card, None without one (parse() requires none)


@dataclass(frozen=True)
class Checkin:
    hash: str
    branch: str | None
    user: str | None
    sender: Sender
    comment: str
    parents: tuple[str, ...]
    time: datetime


@dataclass(frozen=True)
class TagChange:
    """One T card about a check-in, with the artifact that carried it."""

    artifact: str  # a control artifact (event `g`), or the check-in itself
    target: str  # the check-in's full hash
    name: str  # without `sym-`: `audited`, `ci`, `branch`...
    op: str  # "+" add, "-" cancel, "*" propagate
    value: str | None
    sender: Sender
    user: str | None
    time: datetime  # the artifact's D card: forgeable (`--date-override`)


@dataclass(frozen=True)
class WikiVersion:
    hash: str
    name: str
    sender: Sender
    user: str | None
    content: str
    mimetype: str | None
    time: datetime | None  # its D card, None without one (parse() requires none)
