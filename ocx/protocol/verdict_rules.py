"""Reading verdicts (V2, D25): which of a check-in's verdicts count, and why not. Pure.

From every tag change of `audited` and `ci` on a check-in, with its sender
(F2), each sender's latest verdict on the check-in per objective (the
record hash or file its value names `against`), whichever of the two tags
it is on, is that sender's verdict on that objective (D25, amended: one
per sender, check-in and objective; it is shown with its tag). So two CI
records on one branch, both sent by the node user, are two verdicts, and
a pass against one never hides a fail against the other. A value that is
not a V1 verdict names no objective: it is shown, never counted, and
replaces nothing. A verdict another sender replaced in Fossil's current
tag still counts for its own sender; only the sender's own cancel of the
tag their verdicts are on withdraws them (a cancel names no objective, so
it withdraws each of theirs on that tag; a cancel of the other tag
withdraws nothing they hold). It counts
when its value is a V1 verdict, its sender neither sent the check-in nor is
the user written in it, and a record it names holds the check-in's branch
in its `checkins`.

A sender is a receipt's login, and Fossil reuses what names one: a deleted
login's uid goes to the next login made, which then reads as the sender of
everything the deleted one sent (and a login with no user row reads as
nobody). Fossil keeps nothing that is never reused, so a verdict counts
only when its receipt still names a login and the user written in the tag
(its U card) is that login (D21: who wrote it is who sent it); a verdict
whose login was deleted, or whose uid another login now holds, is shown,
never counted. Senders are kept apart by receipt login, uid and the user
written in the tag, so two deleted logins' verdicts, or a deleted one's and
its uid's next owner's, never merge into one.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .verdict import Judgement, Verdict, VerdictTag, parse_verdict

VERDICT_TAGS = (VerdictTag.audited.value, VerdictTag.ci.value)


@dataclass(frozen=True)
class TagEvent:
    """One change of a verdict tag on the check-in, in the order received."""

    name: str  # `audited` or `ci`
    op: str  # "+" add, "*" propagate, "-" cancel
    value: str | None
    sender: str  # rcvfrom's login (F2), never the U card; "" when its user row is gone or none names one
    user: str | None = None  # the U card: never names a sender, only doubts one (module doc)
    artifact: str = ""
    uid: int | None = None  # rcvfrom.uid: keeps deleted logins apart (module doc)


@dataclass(frozen=True)
class CheckinFacts:
    hash: str
    branch: str | None
    sender: str  # who pushed it (F2)
    user: str | None  # the user written in it (U card)


@dataclass(frozen=True)
class ReadVerdict:
    tag: str
    sender: str
    value: str
    verdict: Verdict | None
    counts: bool
    why: str  # why it counts, or why not
    artifact: str = ""
    uid: int | None = None  # its receipt's uid, shown for a deleted login

    @property
    def objective(self) -> str | None:
        return self.verdict.against if self.verdict else None


# (sender, uid, user written in the tag, objective): objective None for a value that is not a V1 verdict
Standing = tuple[str, "int | None", "str | None", "str | None"]


def objective_of(value: str | None) -> str | None:
    """What a verdict tag's value is judged against (V1's X), None when it is not a verdict."""
    verdict = parse_verdict(value or "")
    return verdict.against if verdict else None


def latest_by_sender(events: Iterable[TagEvent]) -> dict[Standing, TagEvent]:
    """Each sender's standing verdict on the check-in per objective, from its
    changes in the order received (D25): a later verdict on either tag
    against the same objective replaces an earlier one; a cancel withdraws
    every verdict of its sender on the tag it cancels."""
    latest: dict[Standing, TagEvent] = {}
    for event in events:
        if event.name not in VERDICT_TAGS:
            continue
        who = (event.sender, event.uid, event.user)
        if event.op != "-":
            latest[(*who, objective_of(event.value))] = event
            continue
        for key in [k for k, held in latest.items() if k[:3] == who and held.name == event.name]:
            del latest[key]  # its sender withdrew it
    return latest


def read_verdicts(checkin: CheckinFacts, events: Iterable[TagEvent],
                  record_checkins: Callable[[str], tuple[str, ...] | None]) -> list[ReadVerdict]:
    """Every sender's standing verdict on CHECKIN, counted or not as V2 says.

    `record_checkins(hash)` gives the `checkins` of the record with that full
    hash, or None when the repository holds no such record."""
    found = []
    for event in latest_by_sender(events).values():
        value = event.value or ""
        verdict = parse_verdict(value)
        counts, why = _judge(checkin, event, verdict, record_checkins)
        found.append(ReadVerdict(event.name, event.sender, value, verdict, counts, why, event.artifact, event.uid))
    return found


def _judge(checkin: CheckinFacts, event: TagEvent, verdict: Verdict | None,
           record_checkins: Callable[[str], tuple[str, ...] | None]) -> tuple[bool, str]:
    sender = event.sender
    if verdict is None:
        return False, "not a V1 verdict (pass: or fail:, a reason, (against X))"
    if not sender:
        if event.uid is None:
            return False, "no receipt names its sender"
        return False, f"its sender's login (uid {event.uid}) was deleted: nothing says who sent it"
    if sender == checkin.sender:
        return False, f"{sender} sent the check-in"
    if checkin.user is not None and sender == checkin.user:
        return False, f"{sender} is the user written in the check-in"
    if event.user != sender:
        return False, (f"written as {event.user or 'nobody'} but received from {sender} (D21): a deleted login's "
                       "uid now held by another, or a clone writing as someone else")
    if verdict.against_record:
        branches = record_checkins(verdict.against)
        if branches is None:
            return False, f"names record {verdict.against[:12]}, which this repository does not hold"
        if checkin.branch not in branches:
            return False, f"record {verdict.against[:12]} does not list branch {checkin.branch} in its checkins"
        return True, f"by {sender}, against record {verdict.against[:12]}"
    return True, f"by {sender}, against {verdict.against} as it stands in the check-in"


def counted(verdicts: Iterable[ReadVerdict]) -> list[ReadVerdict]:
    return [v for v in verdicts if v.counts]


def outcome(verdicts: Iterable[ReadVerdict], tags: Iterable[str] = VERDICT_TAGS) -> Judgement | None:
    """OCX's own combination of a check-in's verdicts (D25; V2 leaves it to
    the reader), for the queue, the console and the merge gate alike: passed
    when at least one counted verdict of TAGS passes and none fails, failed
    when any counted one fails, None when none counts."""
    wanted = set(tags)
    judgements = {v.verdict.judgement for v in verdicts if v.counts and v.tag in wanted and v.verdict}
    if Judgement.failed in judgements:
        return Judgement.failed
    return Judgement.passed if judgements else None
