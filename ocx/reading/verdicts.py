"""Verdicts as the repository holds them, read by V2's rules (D25).

    with Repository(path) as repository:
        checkin = resolve_checkin(repository, "1a2b3c4d5e")
        for verdict in verdicts(repository, checkin): ...
        for entry in queue(repository, "dev"): ...
        if passed(repository, checkin): ...  # a merge gate (docs/verdicts.md)

Everything comes from the repository: each tag change with its sender
(rcvfrom, F2), the check-in's sender and U card, and the text of a record a
verdict names. The rules themselves are ocx/protocol/verdict_rules.py.
The repository must be the one that received the tags (D29): a clone
records itself as the sender of everything it pulled.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..fossil.artifacts import Checkin, TagChange
from ..fossil.errors import RepositoryError
from ..fossil.repository import Repository
from ..protocol.verdict import Judgement
from ..protocol.verdict_rules import VERDICT_TAGS, CheckinFacts, ReadVerdict, TagEvent, counted, outcome, read_verdicts


class NotACheckin(RepositoryError):
    """CHECKIN names nothing, more than one artifact, or no check-in (D11)."""


def resolve_checkin(repository: Repository, prefix: str) -> str:
    """The full hash of the check-in PREFIX (10+ hex digits) names (D11)."""
    try:
        found = repository.resolve(prefix.lower())
    except RepositoryError as error:
        raise NotACheckin(f"CHECKIN {error}") from None
    if repository.event_type(found) != "ci":
        raise NotACheckin(f"CHECKIN {prefix}: {found} is not a check-in")
    return found


def _facts(found: Checkin) -> CheckinFacts:
    return CheckinFacts(found.hash, found.branch, found.sender.login or "", found.user)


def _events(changes: Iterable[TagChange]) -> list[TagEvent]:
    return [TagEvent(change.name, change.op, change.value, change.sender.login or "", change.user, change.artifact,
                     change.sender.uid) for change in changes]


def record_text(repository: Repository, artifact: str) -> str | None:
    """A record's text: a forum post's body, or a ticket change's comment (D12)."""
    kind = repository.event_type(artifact)
    if kind == "f":
        return repository.post(artifact).body
    if kind == "t":
        return repository.ticket_change(artifact).comment
    return None


def record_checkins(repository: Repository) -> Callable[[str], tuple[str, ...] | None]:
    """`checkins` of the record with a given full hash, None when the
    repository holds no such record; each record read once per call."""
    @cache
    def lookup(record_hash: str) -> tuple[str, ...] | None:
        from ..protocol.messages import Record, message_in  # pydantic's start-up only when a verdict names a record

        try:
            record = message_in(record_text(repository, record_hash) or "")
        except RepositoryError:  # not there, or not a post or ticket change: no verdict counts against it
            return None
        return tuple(record.checkins) if isinstance(record, Record) else None

    return lookup


def verdicts(repository: Repository, checkin: str, found: Checkin | None = None) -> list[ReadVerdict]:
    """Every sender's standing verdict on CHECKIN (a full hash), counted or not (D25: one per sender and objective)."""
    found = found or repository.checkin(checkin)
    return read_verdicts(_facts(found), _events(repository.tag_histories([checkin], VERDICT_TAGS)[checkin]),
                         record_checkins(repository))


def verdicts_of(repository: Repository, checkins: Iterable[str]) -> dict[str, list[ReadVerdict]]:
    """`verdicts` of each of CHECKINS (full hashes), read together: one pick of
    the tag changes for all of them (fossil/tag_reads.py), not one each."""
    wanted = list(dict.fromkeys(checkins))
    facts = repository.checkins(wanted)
    histories = repository.tag_histories(wanted, VERDICT_TAGS)
    lookup = record_checkins(repository)
    return {checkin: read_verdicts(_facts(facts[checkin]), _events(histories[checkin]), lookup) for checkin in wanted}


def passed(repository: Repository, checkin: str, tags: Iterable[str] = VERDICT_TAGS) -> bool:
    """A merge gate's question: does CHECKIN hold at least one counted
    `pass` and no counted `fail`, among verdicts of TAGS, each sender's
    latest per objective (D25)? V2 leaves how to combine verdicts to the
    reader; this is OCX's (protocol/verdict_rules.py `outcome`, as the queue
    and the console show it), short of naming whose verdicts a gate wants
    (filter `verdicts()` for that)."""
    return outcome(verdicts(repository, checkin), tags) is Judgement.passed


@dataclass(frozen=True)
class QueueEntry:
    checkin: str
    comment: str
    sender: str
    user: str | None
    counted: list[ReadVerdict]

    @property
    def outcome(self) -> Judgement | None:
        """passed, failed, or None when no verdict counts (D25's combination)."""
        return outcome(self.counted)


def queue(repository: Repository, branch: str, newest: int | None = None) -> list[QueueEntry]:
    """The check-ins of BRANCH (only its NEWEST so many, when given), oldest
    first, each with its counted verdicts and their outcome (D25, D33; an
    empty list: none counts).
    Reads only what it shows: the check-ins from Fossil's tables, and the
    tag changes that touch them (fossil/tag_reads.py `tag_histories`)."""
    checkins = repository.branch_checkins(branch, newest)
    facts = repository.checkins(checkins)
    standing = verdicts_of(repository, checkins)
    return [QueueEntry(checkin, facts[checkin].comment, facts[checkin].sender.login or "", facts[checkin].user,
                       counted(standing[checkin])) for checkin in checkins]


# -- exact forms, for `--json` and for programs that read them -------------------

def verdict_json(verdict: ReadVerdict) -> dict[str, Any]:
    parsed = verdict.verdict
    return {"tag": verdict.tag, "sender": verdict.sender, "uid": verdict.uid, "value": verdict.value,
            "judgement": parsed.judgement.value if parsed else None, "reason": parsed.reason if parsed else None,
            "objective": verdict.objective, "against_record": bool(parsed and parsed.against_record),
            "counts": verdict.counts, "why": verdict.why, "artifact": verdict.artifact}


def checkin_verdicts_json(repository: Repository, checkin: str) -> dict[str, Any]:
    found = repository.checkin(checkin)
    standing = verdicts(repository, checkin, found)
    judged = outcome(standing)
    return {"checkin": found.hash, "branch": found.branch, "sender": found.sender.login, "user": found.user,
            "comment": found.comment, "outcome": judged.value if judged else None,
            "verdicts": [verdict_json(v) for v in standing]}


def queue_json(branch: str, entries: list[QueueEntry], total: int | None = None) -> dict[str, Any]:
    return {"branch": branch, "total": len(entries) if total is None else total, "checkins": [
        {"checkin": e.checkin, "comment": e.comment, "sender": e.sender, "user": e.user,
         "outcome": e.outcome.value if e.outcome else None,
         "counted": [verdict_json(v) for v in e.counted]} for e in entries]}

