"""What the console shows a viewer, read from the repository alone (D30; docs/console.md).

    with Repository(path) as repository:
        seen = node_records(repository, server_code, node_user)   # console_messages.py
        needs = needs_you(repository, seen, "pat", since=None)
        work = in_work(repository, seen)                          # per open record: its deliveries
        rows = queue_of(repository, "trunk")

systemd's part (the units' live figures, what a program printed) is the
entry's to add (ocx/page/console): this layer reads Fossil only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ..fossil import heads
from ..fossil.repository import Repository
from ..protocol.finder import find_message
from .console_messages import THREAD, AnswerSeen, NodeRecords, RecordSeen

if TYPE_CHECKING:
    from .verdicts import QueueEntry

NOTABLE = ("refused", "budget", "lost", "unenforced")  # ends that need the sender's eye (docs/console.md, 'Needs you')
OWN_RECORDS = 30  # the viewer's newest records whose threads are read for questions
NEWEST = 20  # check-ins shown per branch


@dataclass(frozen=True)
class Question:
    """A post in the thread of a record the viewer sent, that no one has answered."""

    post: str
    record: str
    sender: str | None
    received: datetime | None
    title: str
    text: str


@dataclass(frozen=True)
class Unjudged:
    """A check-in given to an open record of the viewer's, with no counted verdict (V2)."""

    checkin: heads.CheckinHead
    record: str


@dataclass(frozen=True)
class Ended:
    record: RecordSeen
    answer: AnswerSeen


@dataclass
class NeedsYou:
    questions: list[Question] = field(default_factory=list)
    unjudged: list[Unjudged] = field(default_factory=list)
    ended: list[Ended] = field(default_factory=list)
    since: datetime | None = None  # ends before this were seen: the viewer replied to one, or the URL says

    def __len__(self) -> int:
        return len(self.questions) + len(self.unjudged) + len(self.ended)


def _answered(post: heads.ThreadPost, thread: list[heads.ThreadPost]) -> bool:
    """Whether anyone replied to POST, or to a post it edits (an edit replies nothing new)."""
    edited = {post.hash}
    by_hash = {p.hash: p for p in thread}
    current = post
    while current.edit_of and current.edit_of not in edited:
        edited.add(current.edit_of)
        current = by_hash.get(current.edit_of, current)
    return any(p.in_reply_to in edited and not p.pending_moderation for p in thread)


def _question(repository: Repository, post: heads.ThreadPost, record: RecordSeen) -> Question | None:
    found = repository.post(post.hash)
    if find_message(found.body) is not None:
        return None  # a record, stop or response: an answer in its own right, not a question
    title = found.title or ""
    return Question(post.hash, record.hash, post.sender, post.received, title, found.body.strip())


def needs_you(repository: Repository, seen: NodeRecords, viewer: str, since: datetime | None = None) -> NeedsYou:
    """The console's "Needs you" (docs/console.md): unanswered posts in the threads of the viewer's
    records, check-ins given to the viewer's open records that no counted
    verdict judges yet, and the viewer's records answered refused, budget,
    lost or unenforced since SINCE or the newest such answer the viewer
    replied to, whichever is later (the page keeps nothing of its own)."""
    found = NeedsYou()
    own = [record for record in seen.records if record.placed.sender == viewer]
    recent = own[-OWN_RECORDS:]
    threads = heads.thread_posts(repository, [r.placed.place for r in recent if r.placed.place_kind == THREAD])
    acknowledged = _acknowledged(repository, seen, own, threads, viewer)
    found.since = max((t for t in (since, acknowledged) if t is not None), default=None)
    for record in recent:
        thread = threads.get(record.placed.place, []) if record.placed.place_kind == THREAD else []
        superseded = {p.edit_of for p in thread if p.edit_of}
        # Addressed to the viewer: a reply to the viewer's own post (the record's
        # among them); one replying to someone else is their conversation.
        theirs = {p.hash for p in thread if p.sender == viewer}
        for post in thread:
            if (post.sender == viewer or post.pending_moderation or post.hash in superseded
                    or post.hash == record.hash or post.in_reply_to not in theirs or _answered(post, thread)):
                continue
            question = _question(repository, post, record)
            if question is not None:
                found.questions.append(question)
    found.unjudged = _unjudged(repository, [r for r in own if r.hash not in seen.answers])
    for record in own:
        answer = seen.answers.get(record.hash)
        if answer is not None and answer.outcome in NOTABLE and (
                found.since is None or (answer.placed.received and answer.placed.received > found.since)):
            found.ended.append(Ended(record, answer))
    found.ended.sort(key=lambda ended: ended.answer.placed.rcvid, reverse=True)
    return found


def _acknowledged(repository: Repository, seen: NodeRecords, own: list[RecordSeen],
                  threads: dict[str, list[heads.ThreadPost]], viewer: str) -> datetime | None:
    """When the newest notable answer the viewer replied to arrived: a reply
    to it in its thread, or a later change of its ticket by the viewer."""
    newest = None
    for record in own:
        answer = seen.answers.get(record.hash)
        if answer is None or answer.outcome not in NOTABLE or answer.placed.received is None:
            continue
        if record.placed.place_kind == THREAD:
            replied = any(p.sender == viewer and p.in_reply_to == answer.hash
                          for p in threads.get(record.placed.place, []))
        else:
            replied = any(c.sender.login == viewer and (c.sender.rcvid or 0) > answer.placed.rcvid
                          for c in repository.ticket_changes(record.placed.place))
        if replied and (newest is None or answer.placed.received > newest):
            newest = answer.placed.received
    return newest


def given_checkins(repository: Repository, records: list[RecordSeen]) -> dict[str, list[heads.CheckinHead]]:
    """The NEWEST check-ins C3 gave each of RECORDS: on its branches, received
    after it, not sent by its own user; one query for all of them."""
    watching = [record for record in records if record.checkins]
    if not watching:
        return {}
    branches = {branch for record in watching for branch in record.checkins}
    after = min(record.placed.rcvid for record in watching)
    arrived = heads.checkins_received(repository, branches, after, NEWEST * len(watching))
    return {record.hash: [c for c in arrived if c.branch in record.checkins and c.rcvid > record.placed.rcvid
                          and c.sender != record.user][:NEWEST] for record in watching}


def _unjudged(repository: Repository, records: list[RecordSeen]) -> list[Unjudged]:
    given = [Unjudged(checkin, record) for record, checkins in given_checkins(repository, records).items()
             for checkin in checkins]
    if not given:
        return []
    from ..protocol.verdict_rules import counted  # the verdict models, only when there is something to judge
    from .verdicts import verdicts_of

    standing = verdicts_of(repository, [item.checkin.hash for item in given])  # one read for all of them
    return [item for item in given if not counted(standing[item.checkin.hash])]


@dataclass(frozen=True)
class Deliveries:
    """What C3 gave an open record so far, read from the repository (the
    node's inbox is its own, D2): posts by users it hears in its place and
    check-ins on its branches, received after it. A command run takes its
    check-ins one at a time (D18): those neither judged nor running wait."""

    posts: int = 0
    checkins: tuple[heads.CheckinHead, ...] = ()
    judged: frozenset[str] = frozenset()  # check-ins the node's `ci` verdict against this record answers (V1, D25)


def deliveries(repository: Repository, seen: NodeRecords,
               records: list[RecordSeen] | None = None) -> dict[str, Deliveries]:
    """Each open record's (or each of RECORDS') deliveries (see Deliveries)."""
    open_records = seen.open if records is None else records
    threads = heads.thread_posts(repository, [r.placed.place for r in open_records if r.placed.place_kind == THREAD])
    arrived = given_checkins(repository, open_records)
    answered = _answered_by_node(repository, seen.node_user, [c.hash for r in open_records if r.is_command
                                                              for c in arrived.get(r.hash, ())])
    given: dict[str, Deliveries] = {}
    for record in open_records:
        heard = set(record.hears) - {record.user}
        if record.placed.place_kind == THREAD:
            posts = sum(1 for p in threads.get(record.placed.place, []) if p.sender in heard
                        and p.rcvid > record.placed.rcvid and not p.pending_moderation)
        else:
            posts = sum(1 for c in repository.ticket_changes(record.placed.place)
                        if c.sender.login in heard and (c.sender.rcvid or 0) > record.placed.rcvid)
        checkins = tuple(arrived.get(record.hash, ()))
        judged = (frozenset(c.hash for c in checkins if (c.hash, record.hash) in answered) if record.is_command
                  else frozenset())
        given[record.hash] = Deliveries(posts, checkins, judged)
    return given


def _answered_by_node(repository: Repository, node_user: str, checkins: list[str]) -> set[tuple[str, str]]:
    """(check-in, objective) of each standing `ci` verdict NODE_USER holds on
    CHECKINS: a command record's run on a check-in is answered by the
    node's verdict against that record, not against another CI record on
    the same branch (D25, per objective)."""
    if not checkins:
        return set()
    from .verdicts import verdicts_of  # the verdict models, only when a command record was given check-ins

    return {(checkin, v.objective) for checkin, standing in verdicts_of(repository, checkins).items()
            for v in standing if v.tag == "ci" and v.sender == node_user and v.objective}


def branches(repository: Repository) -> list[str]:
    return heads.branch_names(repository)


def queue_of(repository: Repository, branch: str, newest: int = NEWEST) -> list[QueueEntry]:
    """The NEWEST check-ins of BRANCH with their counted verdicts, newest
    first (ocx.reading.verdicts.queue, D33)."""
    from .verdicts import queue

    entries = queue(repository, branch, newest=newest)
    return list(reversed(entries))
