"""Reading a check-in's verdicts newest first, and only until each sender's
standing is decided (fossil/tag_reads.py `read_newest_first`), gives every
sender the same latest verdict (D25, V2) as reading its whole history. Pure:
the artifacts are generated, in the shape `_g_candidates` and `_changes_of`
give them."""
from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings, strategies as st

from ocx.fossil.artifacts import Sender, TagChange
from ocx.fossil.tag_reads import read_newest_first
from ocx.protocol.verdict_rules import TagEvent, latest_by_sender

CHECKINS = ["aa" * 32, "ab" * 32, "ba" * 32]  # two share no prefix; one prefix names two (10 digits alike)
CHECKINS[1] = CHECKINS[0][:10] + "cd" * 27  # same 10-digit prefix as CHECKINS[0]
SENDERS = ["alice", "bob", "carol", None]
NAMES = ["audited", "ci", "release"]
WANTED = frozenset({"audited", "ci"})
WHEN = datetime(2026, 1, 1, tzinfo=timezone.utc)

card = st.tuples(st.sampled_from(CHECKINS), st.sampled_from(NAMES), st.sampled_from("+-*"),
                 st.sampled_from(["pass: fine (against PLAN.md)", "fail: no (against PLAN.md)", "maybe"]))
artifact = st.tuples(st.sampled_from(SENDERS), st.lists(card, min_size=1, max_size=3),
                     st.booleans())  # the last: Fossil's comment has another form (`run` NULL)


def as_changes(objid: int, sender: str | None, cards) -> list[TagChange]:
    return [TagChange(artifact=f"{objid:064x}", target=target, name=name, op=op, value=None if op == "-" else value,
                      sender=Sender(sender, None, None, objid), user=sender, time=WHEN)
            for target, name, op, value in cards if name in WANTED]


def events(changes: list[TagChange]) -> list[TagEvent]:
    return [TagEvent(c.name, c.op, c.value, c.sender.login or "", c.user, c.artifact) for c in changes]


@settings(max_examples=400, deadline=None)
@given(st.lists(artifact, max_size=25))
def test_reading_until_each_sender_is_decided_keeps_every_senders_latest_verdict(artifacts) -> None:
    by_prefix: dict[str, list[str]] = {}
    for checkin in CHECKINS:
        by_prefix.setdefault(checkin[:10], []).append(checkin)
    cards = {objid: (sender, chosen) for objid, (sender, chosen, _) in enumerate(artifacts, start=1)}
    # Fossil's comment names a one-target artifact's target; any other comment leaves run NULL.
    candidates = [(objid, objid, sender,
                   None if other or len({t for t, *_ in chosen}) != 1 else chosen[0][0][:10])
                  for objid, (sender, chosen, other) in enumerate(artifacts, start=1)][::-1]
    read: list[int] = []

    def changes_of(objid: int) -> list[TagChange]:
        read.append(objid)
        return as_changes(objid, *cards[objid])

    whole = read_newest_first(candidates, by_prefix, changes_of, standing=False)
    everything = len(read)
    read.clear()
    standing = read_newest_first(candidates, by_prefix, changes_of, standing=True)
    assert len(read) <= everything
    for checkin in CHECKINS:
        full = [c for *_, c in sorted(whole, key=lambda e: e[:3]) if c.target == checkin]
        kept = [c for *_, c in sorted(standing, key=lambda e: e[:3]) if c.target == checkin]
        assert latest_by_sender(events(kept)) == latest_by_sender(events(full))


def test_an_older_change_of_a_decided_sender_is_not_read() -> None:
    target = CHECKINS[2]
    cards = {1: ("alice", [(target, "audited", "+", "fail: no (against PLAN.md)")]),
             2: ("alice", [(target, "ci", "+", "pass: fine (against PLAN.md)")]),
             3: ("bob", [(target, "audited", "-", None)])}
    read: list[int] = []

    def changes_of(objid: int) -> list[TagChange]:
        read.append(objid)
        return as_changes(objid, *cards[objid])

    candidates = [(objid, objid, cards[objid][0], target[:10]) for objid in (3, 2, 1)]
    found = read_newest_first(candidates, {target[:10]: [target]}, changes_of, standing=True)
    assert read == [3, 2]  # alice's newer `ci` decides her standing; her older `audited` is never read
    assert [change.name for *_, change in found] == ["audited", "ci"]
