"""A node's records and their answers as the console reads them (docs/console.md).

The same rules `ocx activity` reads by (ocx/node/activity.py): a
record is this node's when it is for its server-code and its sender holds
admin or setup now (C1); its answer is a response at its place from the
node user (C4), or a `lost` one from an admin or setup sender once the
record's receipt plus its wall has passed (D31); edits and posts held for
moderation are no messages (D9, D28).

Read without the message models: building their pydantic schemas costs
most of the page's 200 ms before anything is read, and the page only
shows fields. So a message here is the JSON object the finder gives (D7),
version 1, of a kind the node reads, with its fields taken as written and
checked only as far as they are shown: a record the node will refuse shows
in work until its `refused` answer arrives, which then shows it done.
tests/reading/test_console_messages.py holds this to activity's reading.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from ..fossil.artifacts import Sender
from ..fossil.repository import Repository
from ..protocol import budget as grammar
from ..protocol.errors import FieldError
from ..protocol.finder import find_message, is_version_one
from .activity import ESCAPE  # a post holding neither it nor the server-code holds no message for that node

THREAD, TICKET = "thread", "ticket"  # D12: a record's place
OUTCOMES = ("refused", "stopped", "budget", "unenforced", "lost", "exited")  # C4


def text(value: object) -> str:
    """A field shown as text: a string as written, anything else as nothing."""
    return value if isinstance(value, str) else ""


def texts(value: object) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def _limit(parse: Callable[[object], int], value: object) -> int | None:
    if value is None:
        return None
    try:
        return parse(value)
    except (FieldError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Limits:
    """A record's budget as systemd and the node hold it (D10, D17): seconds,
    bytes, a count; None where the record sets none (or nothing readable)."""

    wall: int | None = None
    cpu: int | None = None
    memory: int | None = None
    processes: int | None = None

    @classmethod
    def of(cls, written: object) -> Limits:
        budget = written if isinstance(written, dict) else {}
        return cls(_limit(grammar.parse_wall, budget.get("wall")), _limit(grammar.parse_cpu, budget.get("cpu")),
                   _limit(grammar.parse_memory, budget.get("memory")),
                   _limit(grammar.parse_processes, budget.get("processes")))


@dataclass(frozen=True)
class Placed:
    """An artifact holding a message: where, from whom (F2) and when it arrived."""

    hash: str
    place_kind: str
    place: str
    sender: str | None
    received: datetime | None
    rcvid: int
    fields: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class RecordSeen:
    """A record (C2) as written: each field shown as text, or empty."""

    placed: Placed

    @property
    def hash(self) -> str:
        return self.placed.hash

    @property
    def user(self) -> str:
        return text(self.placed.fields.get("user"))

    @property
    def runner(self) -> str:
        return text(self.placed.fields.get("runner"))

    @property
    def objective(self) -> str:
        return text(self.placed.fields.get("objective"))

    @property
    def checkins(self) -> tuple[str, ...]:
        return texts(self.placed.fields.get("checkins"))

    @property
    def hears(self) -> tuple[str, ...]:
        return texts(self.placed.fields.get("hears"))

    @property
    def limits(self) -> Limits:
        return Limits.of(self.placed.fields.get("budget"))

    @property
    def is_command(self) -> bool:
        return self.runner == "command"


@dataclass(frozen=True)
class AnswerSeen:
    placed: Placed

    @property
    def hash(self) -> str:
        return self.placed.hash

    @property
    def answers(self) -> str:
        return text(self.placed.fields.get("answers"))

    @property
    def outcome(self) -> str:
        return text(self.placed.fields.get("outcome"))

    @property
    def note(self) -> str:
        return text(self.placed.fields.get("note"))


@dataclass
class NodeRecords:
    """One node's records, oldest first, and the answer of each answered one."""

    node: str  # its server-code (C1)
    node_user: str
    records: list[RecordSeen]
    answers: dict[str, AnswerSeen]  # record hash -> its answer

    @property
    def open(self) -> list[RecordSeen]:
        return [record for record in self.records if record.hash not in self.answers]

    def answered(self, latest: int) -> list[tuple[RecordSeen, AnswerSeen]]:
        """The LATEST answered records, newest answer first."""
        pairs = [(record, self.answers[record.hash]) for record in self.records if record.hash in self.answers]
        pairs.sort(key=lambda pair: pair[1].placed.rcvid, reverse=True)
        return pairs[:latest]


class _Sent(Protocol):
    @property
    def sender(self) -> Sender: ...


SentT = TypeVar("SentT", bound=_Sent)


def _by(read: Callable[..., list[SentT]], senders: frozenset[str]) -> list[SentT]:
    """READ's artifacts that SENDERS sent: through its own filter where the
    readers have one (docs/verdicts.md, 'Cost'), else all of them, filtered here."""
    if "senders" in inspect.signature(read).parameters:
        return read(senders)
    return [artifact for artifact in read() if artifact.sender.login in senders]


def messages(repository: Repository, server_code: str, senders: frozenset[str]) -> Iterable[Placed]:
    """Every version 1 message for SERVER_CODE that SENDERS sent, in posts
    (no edit, none held for moderation) and ticket changes."""
    posts = (repository.forum_posts(senders, mentioning=(server_code.encode(), ESCAPE))
             if "mentioning" in inspect.signature(repository.forum_posts).parameters
             else _by(repository.forum_posts, senders))
    found = [(p.hash, p.body, THREAD, p.root, p.sender) for p in posts
             if p.edit_of is None and not p.pending_moderation]
    found += [(c.hash, c.comment or "", TICKET, c.ticket, c.sender)
              for c in _by(repository.all_ticket_changes, senders)]
    for hash_, body, kind, place, sender in found:
        message = find_message(body)
        if message is None or not is_version_one(message.get("ocx")) or message.get("node") != server_code:
            continue
        yield Placed(hash_, kind, place, sender.login, sender.time, sender.rcvid or 0, message)


def _seconds(when: datetime | None) -> float:
    return when.timestamp() if when else 0.0


def answers_record(answer: AnswerSeen, record: RecordSeen, node_user: str, admins: frozenset[str]) -> bool:
    """C4 and D31, as ocx/protocol/answers.py decides them."""
    sent_by = answer.placed.sender
    if answer.answers != record.hash or not sent_by or answer.placed.place != record.placed.place:
        return False
    if sent_by == node_user:
        return True
    wall = record.limits.wall or 0
    return (answer.outcome == "lost" and sent_by in admins
            and _seconds(answer.placed.received) >= _seconds(record.placed.received) + wall)


def node_records(repository: Repository, server_code: str, node_user: str,
                 admins: frozenset[str] | None = None) -> NodeRecords:
    admins = repository.admins() if admins is None else admins
    records: list[RecordSeen] = []
    responses: dict[str, list[AnswerSeen]] = {}
    for placed in sorted(messages(repository, server_code, admins | {node_user}), key=lambda p: p.rcvid):
        kind = placed.fields.get("kind")
        if kind == "record" and placed.sender in admins:
            records.append(RecordSeen(placed))
        elif (kind == "response" and placed.fields.get("outcome") in OUTCOMES
              and isinstance(placed.fields.get("note"), str)):
            responses.setdefault(text(placed.fields.get("answers")), []).append(AnswerSeen(placed))
    answers = {}
    for record in records:
        answer = next((a for a in responses.get(record.hash, []) if answers_record(a, record, node_user, admins)), None)
        if answer is not None:
            answers[record.hash] = answer
    return NodeRecords(server_code, node_user, records, answers)
