"""The follower's loop (D38, D39) as plain logic: what it does with each
answer of the server, or with none. The server's side of the held request
is tested for real in test_serving.py, the whole follower in test_two_hosts.py."""
from __future__ import annotations

import os

from ocx.node.config import NodeConfig
from ocx.node.elsewhere.follow import LOST_FIRST, LOST_MOST, WAIT, Follower
from ocx.node.elsewhere.link import hand_over, take_handed
from ocx.fossil.web import WebError


class Server:
    """Answers the follower's requests from a script: a dict, or an exception to raise."""

    def __init__(self, script):
        self.script, self.asked = list(script), []

    def receipts(self, since, wait=0.0, admins=None, facts=False):
        self.asked.append((since, wait))
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def follower(script, tmp_path):
    done: list[str] = []
    config = NodeConfig(name="f", repository=str(tmp_path / "clone.fossil"), url="http://server:8080", elsewhere=True)
    server = Server(script)
    run = Follower(config, server, pull=lambda: done.append("pull"), wake=lambda: done.append("poke"),
                   check=lambda: done.append("check"), log=lambda _: None, sleep=lambda s: done.append(f"sleep {s}"),
                   hand=lambda since, answer: done.append(f"hand {since} {answer['last']}"))
    return run, server, done


def test_every_request_is_held_by_the_server_and_renewed_only_when_it_answers(tmp_path):
    nothing = {"receipts": [], "last": 7}
    arrived = {"receipts": [{"rcvid": 8}], "last": 8}
    run, server, done = follower([nothing, arrived, nothing], tmp_path)
    run.run(steps=3)
    # The first at once (is the server there?), each later one held by the server (D38).
    assert [wait for _, wait in server.asked] == [0.0, WAIT, WAIT]
    assert [since for since, _ in server.asked] == [0, 7, 8]
    # At its start it reaches the server: the deliberate check; then a receipt: pull, the answer handed
    # over for the pass it wakes, then poke.
    assert done == ["pull", "check", "pull", "hand 7 8", "poke"]
    assert not any(step.startswith("sleep") for step in done)  # nothing paces it while the server answers


def test_losing_the_server_backs_off_and_regaining_it_runs_the_check(tmp_path):
    nothing = {"receipts": [], "last": 3}
    cut = WebError("http://server:8080/ext/ocx: [Errno 101] Network is unreachable")
    run, server, done = follower([nothing, cut, cut, cut, cut, cut, cut, nothing, nothing], tmp_path)
    run.run(steps=9)
    sleeps = [float(step.split()[1]) for step in done if step.startswith("sleep")]
    assert sleeps[0] == LOST_FIRST and sleeps == sorted(sleeps) and max(sleeps) == LOST_MOST
    assert done.count("check") == 2  # at its start, and once the server is back (D38, D39)
    assert done[-2:] == ["pull", "check"]
    assert [since for since, _ in server.asked][-1] == 3  # nothing skipped while cut off


def test_a_change_of_who_holds_admin_wakes_the_node_without_a_pull(tmp_path):
    same = {"receipts": [], "last": 2, "admins": "aaaa"}
    changed = {"receipts": [], "last": 2, "admins": "bbbb"}
    run, server, done = follower([same, same, changed], tmp_path)
    run.run(steps=3)
    assert done == ["pull", "check", "poke"]  # D24: its pass ends a run whose user became an admin


def test_an_answer_handed_over_is_taken_once_fresh_and_only_where_the_pass_starts(tmp_path):
    answer = {"receipts": [{"rcvid": 8}], "last": 8}
    hand_over(tmp_path, 7, answer)
    assert take_handed(tmp_path, 6) is None  # the pass starts elsewhere: it asks the server
    assert take_handed(tmp_path, 7) is None  # and the answer was taken away: never read twice
    hand_over(tmp_path, 7, answer)
    assert (tmp_path / "receipts-handed.json").stat().st_mode & 0o777 == 0o600
    assert take_handed(tmp_path, 7) == answer
    assert take_handed(tmp_path, 7) is None
    hand_over(tmp_path, 7, answer)
    os.utime(tmp_path / "receipts-handed.json", (1, 1))  # stale: asked again
    assert take_handed(tmp_path, 7) is None


def test_a_server_that_answers_and_refuses_the_node_is_not_asked_again(tmp_path):
    """D38: while the server is reachable nothing repeats a request on a timer; a refusal (the node taken
    off the list, its password replaced) ends the follower, saying so, instead of asking every 10 s."""
    from ocx.node.elsewhere.link import ServerRefused

    nothing = {"receipts": [], "last": 3}
    refused = ServerRefused("caller", "ocx-node-f is not the node user of a registered node elsewhere")
    said: list[str] = []
    run, server, done = follower([nothing, refused, nothing, nothing], tmp_path)
    run.log = said.append
    assert run.run(steps=4) is refused
    assert len(server.asked) == 2 and not any(step.startswith("sleep") for step in done)
    assert "refuses this node: caller:" in said[-1] and "not asking again" in said[-1]


def test_a_login_fossil_does_not_take_ends_the_follower_too(tmp_path):
    from ocx.node.elsewhere.link import LoginNotTaken

    refused = LoginNotTaken("login as ocx-node-f at http://server:8080 failed (HTTP 401)")
    said: list[str] = []
    run, server, done = follower([refused, {"receipts": [], "last": 1}], tmp_path)
    run.log = said.append
    assert run.run(steps=2) is refused and len(server.asked) == 1
    assert "HTTP 401" in said[-1] and not any(step.startswith("sleep") for step in done)
