"""C4 and D31: which response answers a record, the one rule every reader uses."""
from ocx.protocol.answers import answers_record
from ocx.protocol.messages import parse_message

RECORD = "ab" * 32
NODE = "6c" * 20
WALL = 3600


def response(outcome="exited", answers=RECORD):
    return parse_message({"ocx": 1, "kind": "response", "node": NODE, "answers": answers,
                          "outcome": outcome, "note": "n"})


def answers(resp, sender, received, admins=("admin",)):
    asked = []

    def holds_admin(login):
        asked.append(login)
        return login in admins

    got = answers_record(resp, RECORD, sender, node_user="ocx-node", holds_admin=holds_admin,
                         received=received, record_received=1000.0, wall_seconds=WALL)
    return got, asked


def test_the_node_users_response_answers_it_whenever_it_came():
    assert answers(response(), "ocx-node", 1001.0) == (True, [])


def test_a_response_to_another_record_does_not():
    assert answers(response(answers="cd" * 32), "ocx-node", 1001.0)[0] is False


def test_an_admins_lost_answers_it_only_after_receipt_plus_wall():
    assert answers(response("lost"), "admin", 1000.0 + WALL - 1)[0] is False
    assert answers(response("lost"), "admin", 1000.0 + WALL) == (True, ["admin"])


def test_a_lost_from_a_non_admin_or_another_outcome_from_an_admin_does_not():
    assert answers(response("lost"), "mallory", 1000.0 + WALL + 5)[0] is False
    assert answers(response("exited"), "admin", 1000.0 + WALL + 5) == (False, [])


def test_no_sender_is_no_answer():
    assert answers(response(), None, 1001.0)[0] is False
