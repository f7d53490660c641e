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


def test_one_verdict_per_sender_whichever_tag_it_is_on_and_other_tags_ignored():
    # D25: alice's later `ci` verdict replaces her `audited` one; shown with its tag.
    got = read(add("alice", "pass: a (against PLAN.md)"), add("alice", "fail: b (against PLAN.md)", "ci"),
               TagEvent("branch", "+", "dev", "alice"))
    assert set(got) == {("ci", "alice")} and got[("ci", "alice")].value == "fail: b (against PLAN.md)"
    back = read(add("alice", "fail: b (against PLAN.md)", "ci"), add("alice", "pass: a (against PLAN.md)"))
    assert set(back) == {("audited", "alice")}


def test_a_cancel_withdraws_only_the_verdict_on_the_tag_it_cancels():
    on_ci = add("alice", "pass: a (against PLAN.md)", "ci")
    assert read(on_ci, TagEvent("ci", "-", None, "alice")) == {}
    # Her cancel of `audited`, which holds no verdict of hers, leaves her `ci` one standing.
    assert read(on_ci, TagEvent("audited", "-", None, "alice"))[("ci", "alice")].counts
    # A later verdict replaced the earlier one: cancelling the earlier tag brings nothing back.
    assert read(on_ci, add("alice", "fail: b (against PLAN.md)"), TagEvent("audited", "-", None, "alice")) == {}


senders = st.sampled_from(["alice", "bob", "carol", "dave"])
events = st.lists(st.builds(TagEvent, st.sampled_from(["audited", "ci", "branch"]), st.sampled_from("+-*"),
                            st.one_of(st.none(), st.text(max_size=20), st.just("pass: ok (against PLAN.md)")),
                            senders, senders))


@given(events)
def test_at_most_one_verdict_per_sender_its_latest_and_never_the_checkins_sender(history):
    history = [TagEvent(e.name, e.op, e.value, e.sender, e.user, f"artifact-{i}") for i, e in enumerate(history)]
    verdicts = read_verdicts(CHECKIN, history, RECORDS.get)
    senders_seen = [v.sender for v in verdicts]
    assert len(senders_seen) == len(set(senders_seen))  # D25: one per sender per check-in
    assert all(v.sender != "carol" for v in counted(verdicts))
    latest = latest_by_sender(history)
    assert all(latest[v.sender].op != "-" and latest[v.sender].name == v.tag for v in verdicts)
    for verdict in verdicts:  # the sender's last verdict-tag add, and no later cancel of that tag
        theirs = [e for e in history if e.sender == verdict.sender and e.name in ("audited", "ci")]
        last_add = max(i for i, e in enumerate(theirs) if e.op != "-")
        assert theirs[last_add].artifact == verdict.artifact and theirs[last_add].name == verdict.tag
        assert not any(e.op == "-" and e.name == verdict.tag for e in theirs[last_add + 1:])
