"""V2's counting rules, pure: replaced, cancelled, self-given, U card, record-scoped, per objective (D25)."""
from hypothesis import given, strategies as st

from ocx.protocol.verdict import Judgement
from ocx.protocol.verdict_rules import CheckinFacts, TagEvent, counted, objective_of, outcome, read_verdicts

RECORD = "ab" * 32
OTHER_RECORD = "cd" * 32
CHECKIN = CheckinFacts("ef" * 32, "dev", sender="carol", user="carol")
RECORDS = {RECORD: ("dev", "main"), OTHER_RECORD: ("main",)}


def read(*events, checkin=CHECKIN):
    found = read_verdicts(checkin, events, RECORDS.get)
    return {(v.tag, v.sender): v for v in found} if len({v.sender for v in found}) == len(found) else found


def add(sender, value, name="audited", user=None):
    return TagEvent(name, "+", value, sender, user or sender)


def cancel(sender, name="audited"):
    return TagEvent(name, "-", None, sender, sender)


def test_a_verdict_replaced_in_the_current_tag_still_counts_for_its_sender():
    got = read(add("alice", "pass: reviewed (against PLAN.md)"), add("bob", "fail: too slow (against PLAN.md)"))
    assert got[("audited", "alice")].counts and got[("audited", "bob")].counts
    assert got[("audited", "alice")].objective == "PLAN.md"


def test_each_senders_latest_change_is_its_verdict():
    got = read(add("alice", "fail: broken (against PLAN.md)"), add("alice", "pass: fixed (against PLAN.md)"))
    assert got[("audited", "alice")].value == "pass: fixed (against PLAN.md)" and len(got) == 1


def test_a_cancel_by_its_sender_withdraws_it_but_another_senders_cancel_does_not():
    cancelled = cancel("alice", "audited")
    assert read(add("alice", "pass: ok (against PLAN.md)"), cancelled) == {}
    by_bob = cancel("bob", "audited")
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
    assert read(on_ci, cancel("alice", "ci")) == {}
    # Her cancel of `audited`, which holds no verdict of hers, leaves her `ci` one standing.
    assert read(on_ci, cancel("alice", "audited"))[("ci", "alice")].counts
    # A later verdict replaced the earlier one: cancelling the earlier tag brings nothing back.
    assert read(on_ci, add("alice", "fail: b (against PLAN.md)"), cancel("alice", "audited")) == {}


def test_one_sender_holds_one_verdict_per_objective_and_a_fail_is_never_hidden():
    # D25 amended: the node user's `ci` verdicts of two command records on one branch are two verdicts.
    tests = add("ocx-node", f"fail: 2 failed (against {RECORD})", "ci")
    lint = add("ocx-node", "pass: clean (against lint.toml)", "ci")
    for order in ((tests, lint), (lint, tests)):
        found = read_verdicts(CHECKIN, order, RECORDS.get)
        assert sorted(v.objective for v in counted(found)) == sorted([RECORD, "lint.toml"])
        assert outcome(found) is Judgement.failed
    # The same objective again: the later replaces the earlier.
    fixed = add("ocx-node", f"pass: all passed (against {RECORD})", "ci")
    found = read_verdicts(CHECKIN, (tests, lint, fixed), RECORDS.get)
    assert len(found) == 2 and outcome(found) is Judgement.passed


def test_a_verdict_on_the_other_tag_replaces_only_the_same_objective():
    got = read_verdicts(CHECKIN, (add("alice", "fail: a (against PLAN.md)"), add("alice", "pass: b (against SPEC.md)", "ci"),
                                  add("alice", "pass: c (against PLAN.md)", "ci")), RECORDS.get)
    assert sorted((v.tag, v.objective, v.value[:4]) for v in got) == [("ci", "PLAN.md", "pass"), ("ci", "SPEC.md", "pass")]


def test_a_cancel_withdraws_each_of_its_senders_verdicts_on_that_tag_and_no_other():
    held = (add("alice", "fail: a (against PLAN.md)"), add("alice", "pass: b (against SPEC.md)"),
            add("alice", "fail: c (against NOTES.md)", "ci"))
    got = read_verdicts(CHECKIN, (*held, cancel("alice", "audited")), RECORDS.get)
    assert [(v.tag, v.objective) for v in got] == [("ci", "NOTES.md")]


def test_a_value_that_is_not_a_verdict_replaces_none_of_its_senders_verdicts():
    got = read_verdicts(CHECKIN, (add("alice", "fail: a (against PLAN.md)"), add("alice", "looks fine")), RECORDS.get)
    assert sorted((v.counts, v.value) for v in got) == [(False, "looks fine"), (True, "fail: a (against PLAN.md)")]
    assert outcome(got) is Judgement.failed


def test_outcome_needs_a_counted_pass_and_no_counted_fail():
    assert outcome([]) is None
    assert outcome(read_verdicts(CHECKIN, (add("carol", "fail: mine (against PLAN.md)"),), RECORDS.get)) is None
    passes = read_verdicts(CHECKIN, (add("alice", "pass: ok (against PLAN.md)"),), RECORDS.get)
    assert outcome(passes) is Judgement.passed and outcome(passes, tags=["ci"]) is None


def test_deleted_logins_verdicts_never_count_and_never_merge():
    """D21, D25: a deleted login's receipt names no login; each uid (and each
    user written in the tag) stays its own sender, and none counts."""
    mallory = TagEvent("audited", "+", "fail: broken (against PLAN.md)", "", "mallory", "a1", uid=7)
    oscar = TagEvent("audited", "+", "pass: fine (against PLAN.md)", "", "oscar", "a2", uid=8)
    again = TagEvent("audited", "+", "pass: fine (against PLAN.md)", "", "olga", "a3", uid=7)  # uid 7 reused, deleted
    got = read_verdicts(CHECKIN, (mallory, oscar, again), RECORDS.get)
    assert sorted(v.artifact for v in got) == ["a1", "a2", "a3"] and not counted(got)
    assert all("was deleted" in v.why for v in got) and {v.uid for v in got} == {7, 8}
    assert "no receipt names" in read_verdicts(CHECKIN, (add("", "pass: x (against PLAN.md)"),), RECORDS.get)[0].why


def test_a_login_given_a_deleted_ones_uid_does_not_own_its_verdicts():
    """Fossil gives the deleted mallory's uid to bob: her fail now reads as
    received from bob, but it was written as mallory, so it is not bob's
    (D21) and stays apart from bob's own verdict on the same objective."""
    hers = TagEvent("audited", "+", "fail: broken (against PLAN.md)", "bob", "mallory", "a1", uid=7)
    his = TagEvent("audited", "+", "pass: fine (against PLAN.md)", "bob", "bob", "a2", uid=7)
    got = {v.artifact: v for v in read_verdicts(CHECKIN, (hers, his), RECORDS.get)}
    assert set(got) == {"a1", "a2"} and got["a2"].counts and not got["a1"].counts
    assert "written as mallory but received from bob" in got["a1"].why
    # bob's cancel withdraws only what was written as bob.
    his_cancel = TagEvent("audited", "-", None, "bob", "bob", "a3", uid=7)
    assert [v.artifact for v in read_verdicts(CHECKIN, (hers, his, his_cancel), RECORDS.get)] == ["a1"]


senders = st.sampled_from(["alice", "bob", "carol", "dave"])
events = st.lists(st.builds(TagEvent, st.sampled_from(["audited", "ci", "branch"]), st.sampled_from("+-*"),
                            st.one_of(st.none(), st.text(max_size=20), st.just("pass: ok (against PLAN.md)")),
                            senders, senders))


@given(events)
def test_at_most_one_verdict_per_sender_and_objective_its_latest_and_never_the_checkins_sender(history):
    history = [TagEvent(e.name, e.op, e.value, e.sender, e.user, f"artifact-{i}") for i, e in enumerate(history)]
    verdicts = read_verdicts(CHECKIN, history, RECORDS.get)
    writers = {e.artifact: e.user for e in history}
    keys = [(v.sender, writers[v.artifact], v.objective) for v in verdicts]
    assert len(keys) == len(set(keys))  # D25: one per sender (and the user written in it), check-in and objective
    assert all(writers[v.artifact] == v.sender for v in counted(verdicts))  # D21
    assert all(v.sender != "carol" for v in counted(verdicts))
    for verdict in verdicts:  # the sender's last add for that objective, and no later cancel of that tag
        writer = writers[verdict.artifact]
        theirs = [e for e in history if (e.sender, e.user) == (verdict.sender, writer) and e.name in ("audited", "ci")]
        last_add = max(i for i, e in enumerate(theirs) if e.op != "-" and objective_of(e.value) == verdict.objective)
        assert theirs[last_add].artifact == verdict.artifact and theirs[last_add].name == verdict.tag
        assert not any(e.op == "-" and e.name == verdict.tag for e in theirs[last_add + 1:])


judged_events = st.lists(st.builds(
    TagEvent, st.sampled_from(["audited", "ci"]), st.sampled_from("++-"),
    st.sampled_from([f"{j}: r (against {x})" for j in ("pass", "fail") for x in ("PLAN.md", "SPEC.md", RECORD)]),
    senders, senders))


@given(judged_events)
def test_a_standing_counted_fail_against_any_objective_fails_the_checkin(history):
    """Whatever the order, a sender's latest counted fail against an objective
    (written as its sender, no later add for it, no later cancel of its tag)
    fails the check-in."""
    verdicts = read_verdicts(CHECKIN, history, RECORDS.get)
    standing_fail = False
    for i, event in enumerate(history):
        if event.op == "-" or "carol" in (event.sender, event.user) or event.user != event.sender \
                or not event.value.startswith("fail"):
            continue
        later = history[i + 1:]
        if not any((e.sender, e.user) == (event.sender, event.user) and ((e.op != "-" and objective_of(e.value) == objective_of(event.value))
                                                 or (e.op == "-" and e.name == event.name)) for e in later):
            standing_fail = True
    assert (outcome(verdicts) is Judgement.failed) == standing_fail
