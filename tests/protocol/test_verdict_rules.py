"""V2's counting rules, pure: replaced, cancelled, self-given, U card, record-scoped."""
from hypothesis import given, strategies as st

from ocx.protocol.verdict_rules import CheckinFacts, TagEvent, counted, latest_by_sender, read_verdicts

RECORD = "ab" * 32
OTHER_RECORD = "cd" * 32
CHECKIN = CheckinFacts("ef" * 32, "dev", sender="carol", user="carol")
RECORDS = {RECORD: ("dev", "main"), OTHER_RECORD: ("main",)}


def read(*events, checkin=CHECKIN):
    return {(v.tag, v.sender): v for v in read_verdicts(checkin, events, RECORDS.get)}


def add(sender, value, name="audited", user=None):
    return TagEvent(name, "+", value, sender, user or sender)


def test_a_verdict_replaced_in_the_current_tag_still_counts_for_its_sender():
    got = read(add("alice", "pass: reviewed (against PLAN.md)"), add("bob", "fail: too slow (against PLAN.md)"))
    assert got[("audited", "alice")].counts and got[("audited", "bob")].counts
    assert got[("audited", "alice")].objective == "PLAN.md"


def test_each_senders_latest_change_is_its_verdict():
    got = read(add("alice", "fail: broken (against PLAN.md)"), add("alice", "pass: fixed (against PLAN.md)"))
    assert got[("audited", "alice")].value == "pass: fixed (against PLAN.md)" and len(got) == 1


def test_a_cancel_by_its_sender_withdraws_it_but_another_senders_cancel_does_not():
    cancelled = TagEvent("audited", "-", None, "alice")
    assert read(add("alice", "pass: ok (against PLAN.md)"), cancelled) == {}
    by_bob = TagEvent("audited", "-", None, "bob")
    assert read(add("alice", "pass: ok (against PLAN.md)"), by_bob)[("audited", "alice")].counts


def test_a_verdict_from_whoever_sent_the_checkin_does_not_count():
    got = read(add("carol", "pass: mine is fine (against PLAN.md)"))[("audited", "carol")]
    assert not got.counts and got.why == "carol sent the check-in"


def test_a_verdict_from_the_user_written_in_the_checkin_does_not_count():
    checkin = CheckinFacts("ef" * 32, "dev", sender="pusher", user="dave")
    got = read(add("dave", "pass: ok (against PLAN.md)"), checkin=checkin)[("audited", "dave")]
    assert not got.counts and "user written in the check-in" in got.why


def test_a_forged_u_card_on_the_tag_changes_nothing_the_sender_decides():
    # Carol (the check-in's sender) pushes a tag whose U card says alice: still carol's.
    got = read(add("carol", "pass: ok (against PLAN.md)", user="alice"))
    assert list(got) == [("audited", "carol")] and not got[("audited", "carol")].counts


def test_a_record_scoped_verdict_counts_only_where_the_record_lists_the_branch():
    assert read(add("ocx-node", f"pass: 3 passed (against {RECORD})", "ci"))[("ci", "ocx-node")].counts
    other = read(add("ocx-node", f"pass: 3 passed (against {OTHER_RECORD})", "ci"))[("ci", "ocx-node")]
    assert not other.counts and "does not list branch dev" in other.why
    unknown = read(add("ocx-node", f"pass: 3 passed (against {'12' * 32})", "ci"))[("ci", "ocx-node")]
    assert not unknown.counts and "does not hold" in unknown.why


def test_a_value_that_is_not_a_verdict_is_shown_and_not_counted():
    got = read(add("alice", "looks good"))[("audited", "alice")]
    assert not got.counts and got.verdict is None and got.value == "looks good"


def test_audited_and_ci_are_kept_apart_and_other_tags_ignored():
    got = read(add("alice", "pass: a (against PLAN.md)"), add("alice", "fail: b (against PLAN.md)", "ci"),
               TagEvent("branch", "+", "dev", "alice"))
    assert set(got) == {("audited", "alice"), ("ci", "alice")}


senders = st.sampled_from(["alice", "bob", "carol", "dave"])
events = st.lists(st.builds(TagEvent, st.sampled_from(["audited", "ci", "branch"]), st.sampled_from("+-*"),
                            st.one_of(st.none(), st.text(max_size=20), st.just("pass: ok (against PLAN.md)")),
                            senders, senders))


@given(events)
def test_at_most_one_verdict_per_sender_and_tag_and_never_the_checkins_sender(history):
    verdicts = read_verdicts(CHECKIN, history, RECORDS.get)
    keys = [(v.tag, v.sender) for v in verdicts]
    assert len(keys) == len(set(keys))
    assert all(v.sender != "carol" for v in counted(verdicts))
    latest = latest_by_sender(history)
    assert all(latest[(v.tag, v.sender)].op != "-" for v in verdicts)
