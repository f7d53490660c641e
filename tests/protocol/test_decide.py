import json
from dataclasses import replace

import pytest

from ocx.protocol import Outcome, parse_message
from ocx.protocol.decide import (CHANGE, CHECKIN, OTHER, POST, Admit, Answered, Arrival, Deliver, Ignore,
                                 NodeFacts, OpenRecord, Refuse, RunCheckin, StopRun, decide)

from .examples import NODE, ci_record, record, response, stop

ADMIN = frozenset("as")
HASH = "1" * 40
POST_HASH = "2" * 40
THREAD = "3" * 40
CI_HASH = "4" * 40
TICKET = "5" * 40


def body(obj) -> str:
    return "Please.\n\n```json\n" + json.dumps(obj) + "\n```\n"


def arrival(obj=None, **fields) -> Arrival:
    base = dict(hash=HASH, kind=POST, sender="pat", sender_capabilities=ADMIN, text=body(obj or record()), place=THREAD, rcvid=10)
    base.update(fields)
    return Arrival(**base)


SESSION = OpenRecord(HASH, parse_message(record()), THREAD, received=1000.0, rcvid=5)
CI = OpenRecord(CI_HASH, parse_message(ci_record()), THREAD, received=1000.0, rcvid=5)
OPEN = NodeFacts(NODE, "ocx-node", (SESSION, CI))
EMPTY = NodeFacts(NODE, "ocx-node")


def only(actions):
    assert len(actions) == 1, actions
    return actions[0]


def test_a_record_from_an_admin_is_admitted():
    action = only(decide(arrival(), EMPTY))
    assert isinstance(action, Admit) and action.record_hash == HASH and action.place == THREAD
    assert action.record.user == "claude-91c0de"


@pytest.mark.parametrize("obj,why", [
    (record(node="f" * 40), "not a message for this node"), (record(ocx=2), "not a message for this node"),
    (record(ocx="1"), "not a message for this node"), (record(kind="order"), "unknown kind"),
])
def test_messages_not_for_this_node_are_ignored(obj, why):
    assert why in only(decide(arrival(obj), EMPTY)).why


@pytest.mark.parametrize("changes,why", [
    ({"sender_capabilities": frozenset("ei4")}, "neither admin nor setup"),
    ({"sender": None, "sender_capabilities": frozenset()}, "neither admin nor setup"),
    ({"edit_of": "9" * 40}, "an edit"), ({"pending_moderation": True}, "moderation"),
    ({"kind": OTHER}, "neither a message"),
])
def test_records_from_the_wrong_sender_or_shape_are_ignored(changes, why):
    action = only(decide(arrival(**changes), EMPTY))
    assert isinstance(action, Ignore) and why in action.why


def test_a_malformed_record_is_refused_naming_the_field():
    action = only(decide(arrival(record(budget={"wall": "2 hours"})), EMPTY))
    assert isinstance(action, Refuse) and action.error.field == "budget.wall"


def test_a_record_already_answered_or_open_is_not_acted_on_again():
    assert isinstance(only(decide(arrival(), NodeFacts(NODE, "ocx-node", answered=frozenset({HASH})))), Ignore)
    assert isinstance(only(decide(arrival(), OPEN)), Ignore)


def test_a_stop_from_an_admin_stops_an_open_record():
    action = only(decide(arrival(stop(stops=HASH), hash=POST_HASH), OPEN))
    assert action == StopRun(HASH, "pat")


def test_stops_that_are_not_acted_on():
    assert isinstance(only(decide(arrival(stop(stops=HASH), hash=POST_HASH), EMPTY)), Ignore)
    assert isinstance(only(decide(arrival(stop(stops=HASH), hash=POST_HASH, sender_capabilities=frozenset("i")), OPEN)), Ignore)
    assert isinstance(only(decide(arrival(stop(stops="xyz"), hash=POST_HASH), OPEN)), Ignore)


def test_responses_close_only_from_the_node_user_or_a_late_admin_lost():
    own = only(decide(arrival(response(answers=HASH), hash=POST_HASH, sender="ocx-node", sender_capabilities=frozenset()), OPEN))
    assert own == Answered(HASH, Outcome.exited, "ocx-node")
    forged = only(decide(arrival(response(answers=HASH), hash=POST_HASH, sender="mallory", sender_capabilities=frozenset("i")), OPEN))
    assert isinstance(forged, Ignore)
    lost = response(answers=HASH, outcome="lost", note="node gone")
    early = only(decide(arrival(lost, hash=POST_HASH, received=1000.0 + 7199), OPEN))
    assert isinstance(early, Ignore) and "D31" in early.why
    late = only(decide(arrival(lost, hash=POST_HASH, received=1000.0 + 7200), OPEN))
    assert late == Answered(HASH, Outcome.lost, "pat")


def test_posts_in_the_place_from_a_heard_user_are_delivered():
    action = only(decide(arrival(hash=POST_HASH, text="Looks good?"), OPEN))
    assert isinstance(action, Deliver) and action.record_hash == HASH
    assert action.delivery.text == f"Post {POST_HASH} from pat: Looks good?"


def test_an_edit_by_a_heard_user_is_delivered_with_its_own_hash_and_whole_new_text_d44():
    edited = "Looks good?\n\nEdit: the parser too."
    action = only(decide(arrival(hash=POST_HASH, text=edited, edit_of="9" * 40), OPEN))
    assert isinstance(action, Deliver) and action.record_hash == HASH and action.delivery.hash == POST_HASH
    assert action.delivery.text == f"Post {POST_HASH} from pat: {edited}"


@pytest.mark.parametrize("changes", [{"sender": "eve"}, {"sender": "claude-91c0de"}, {"place": "6" * 40},
                                     {"pending_moderation": True}])
def test_an_edit_is_never_a_message_and_delivers_only_as_a_post_would_d9_d44(changes):
    fields = {"hash": POST_HASH, "edit_of": "9" * 40, **changes}
    action = only(decide(arrival(stop(stops=HASH), **fields), OPEN))  # a stop in an edit stops nothing
    assert isinstance(action, Ignore)
    as_edit = only(decide(arrival(stop(stops=HASH), hash=POST_HASH, edit_of="9" * 40), OPEN))
    assert isinstance(as_edit, Deliver)  # from a heard user in the place: delivered, still not a stop


@pytest.mark.parametrize("changes", [{"sender": "eve"}, {"sender": "claude-91c0de"}, {"place": "6" * 40}, {"rcvid": 5}, {"rcvid": 2}])
def test_posts_not_delivered(changes):
    fields = {"hash": POST_HASH, "text": "hello", **changes}
    assert isinstance(only(decide(arrival(**fields), OPEN)), Ignore)


def test_ticket_changes_are_delivered_as_changes():
    ticket_record = OpenRecord(HASH, parse_message(record()), TICKET, rcvid=1)
    facts = NodeFacts(NODE, "ocx-node", (ticket_record,))
    action = only(decide(arrival(hash=POST_HASH, kind=CHANGE, text="more detail", place=TICKET), facts))
    assert action.delivery.text == f"Change {POST_HASH} to {TICKET} from pat: more detail"
    assert action.delivery.parts == {"ticket": TICKET, "user": "pat", "body": "more detail"}


def test_check_ins_go_to_sessions_as_deliveries_and_to_command_records_as_runs():
    on_trunk = decide(arrival(hash=POST_HASH, kind=CHECKIN, branch="trunk", sender="ann", text=""), OPEN)
    assert [type(a) for a in on_trunk] == [Deliver]
    assert on_trunk[0].delivery.text == f"Check-in {POST_HASH} on trunk by ann"
    on_dev = only(decide(arrival(hash=POST_HASH, kind=CHECKIN, branch="dev", sender="ann", text=""), OPEN))
    assert on_dev == RunCheckin(CI_HASH, POST_HASH, "dev")


def test_check_ins_by_the_records_own_user_or_elsewhere_are_not_given():
    assert isinstance(only(decide(arrival(kind=CHECKIN, branch="dev", sender="ci-dev", text=""), OPEN)), Ignore)
    assert isinstance(only(decide(arrival(kind=CHECKIN, branch="feature", sender="ann", text=""), OPEN)), Ignore)


def test_a_delivery_is_one_json_line_d13():
    action = only(decide(arrival(hash=POST_HASH, text="two\nlines"), OPEN))
    line = action.delivery.line()
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line) == {"ocx": 1, "delivery": "post", "hash": POST_HASH, "text": f"Post {POST_HASH} from pat: two\nlines",
                                "user": "pat", "body": "two\nlines"}


def test_check_ins_that_arrived_before_the_record_are_not_given():
    assert isinstance(only(decide(arrival(kind=CHECKIN, branch="dev", sender="ann", text="", rcvid=4), OPEN)), Ignore)


# -- may_act: what a reader may leave unread (D33) --------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402

from ocx.protocol.decide import may_act  # noqa: E402

SENDERS = st.sampled_from(["pat", "ocx-node", "mallory", "ann", None])
CAPABILITIES = st.sampled_from([frozenset(), frozenset("i4"), ADMIN, frozenset("s")])
TEXTS = st.one_of(st.text(max_size=60), st.sampled_from([
    body(record()), body(stop(stops=HASH)), body(response(answers=HASH)), body(response(answers=CI_HASH)),
    body({**response(answers=HASH), "outcome": "lost"}), body(record(budget={"wall": "2 hours"})), "Looks good?"]))


@given(kind=st.sampled_from([POST, CHANGE]), sender=SENDERS, capabilities=CAPABILITIES, text=TEXTS,
       place=st.sampled_from([THREAD, TICKET, "6" * 40]), facts=st.sampled_from([EMPTY, OPEN]),
       received=st.sampled_from([0.0, 1000.0 + 7200]), rcvid=st.integers(0, 20))
def test_what_may_not_act_is_ignored_whatever_its_text(kind, sender, capabilities, text, place, facts, received, rcvid):
    came = Arrival(hash=POST_HASH, kind=kind, sender=sender, sender_capabilities=capabilities, text=text, place=place,
                   received=received, rcvid=rcvid)
    if not may_act(replace(came, text=""), facts):
        assert all(isinstance(action, Ignore) for action in decide(came, facts))


def test_may_act_names_who_and_where():
    assert may_act(arrival(sender="ann", sender_capabilities=frozenset("i4"), place=THREAD), OPEN)  # its place
    assert not may_act(arrival(sender="ann", sender_capabilities=frozenset("i4"), place="6" * 40), OPEN)
    assert may_act(arrival(sender="ann", sender_capabilities=ADMIN, place="6" * 40), EMPTY)  # may send a record
    assert may_act(arrival(sender="ocx-node", sender_capabilities=frozenset(), place="6" * 40), EMPTY)  # a response
    assert may_act(arrival(kind=CHECKIN, sender="ann", sender_capabilities=frozenset(), branch="dev"), EMPTY)


# -- decide_late: a record opened after its receipt waited on a retry (docs/node.md, 'Faults')

from ocx.protocol.decide import decide_late  # noqa: E402


@given(kind=st.sampled_from([POST, CHANGE, CHECKIN]), sender=SENDERS, capabilities=CAPABILITIES, text=TEXTS,
       place=st.sampled_from([THREAD, TICKET]), branch=st.sampled_from(["trunk", "dev", "feature"]),
       late=st.sampled_from([(SESSION,), (CI,), (SESSION, CI)]), rcvid=st.integers(0, 20))
def test_a_record_opened_late_gets_what_it_would_have_had_it_opened_in_time(kind, sender, capabilities, text, place,
                                                                            branch, late, rcvid):
    came = Arrival(hash=POST_HASH, kind=kind, sender=sender, sender_capabilities=capabilities, text=text, place=place,
                   branch=branch if kind == CHECKIN else None, received=1000.0 + 7200, rcvid=rcvid)
    others = tuple(o for o in (SESSION, CI) if o not in late)
    given_late = decide_late(came, NodeFacts(NODE, "ocx-node", others), late)
    in_time = [a for a in decide(came, OPEN) if getattr(a, "record_hash", None) in {o.hash for o in late}]
    # Exactly its share of what the arrival asked had it been open: never an admission, nothing for another.
    assert given_late == [a for a in in_time if isinstance(a, (Deliver, RunCheckin, StopRun, Answered))]
    assert all(not isinstance(a, (Admit, Refuse)) for a in given_late)


def test_a_checkin_read_while_a_command_record_waited_runs_once_it_opens():
    came = arrival(hash=POST_HASH, kind=CHECKIN, branch="dev", sender="ann", text="", rcvid=6)
    assert decide_late(came, EMPTY, (CI,)) == [RunCheckin(CI_HASH, POST_HASH, "dev")]
    assert decide_late(replace(came, rcvid=5), EMPTY, (CI,)) == []  # its own receipt, or before: never (D2)
    assert decide_late(came, EMPTY, (SESSION,)) == []  # not on the session's branches
