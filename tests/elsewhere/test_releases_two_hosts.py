"""Releases of a node elsewhere (D46, D48), on two systemd containers (hosts.py): the build host's
own admin stages a wheel and accepts it there, and its accept is posted by its node user in its
releases thread on the server; set to follow, it builds the check-in the server's node accepted
(one that passed its CI on the server) from its own clone with its own release's wheels, and
accepts it, posted naming the server's accept it followed; `status` on the server lists each
node's release. Three builds in all, one per step: each takes minutes on a busy 2-core machine."""
from __future__ import annotations

import json

import pytest

from tests.container.systemd_container import WHEELHOUSE_INSIDE

from .hosts import Hosts, needs_engine, on, wait_until

pytestmark = needs_engine

FOLLOW_SECONDS = 1500  # the node's pass, its unit's whole build of OCX, the copy at accept
POSTED_SECONDS = 300  # after `current` moved: its services moved, then the post synced to the server


def on_releases(host, *args: str) -> dict:
    done = host.exec(["/opt/ocx/venv/bin/python", "-m", "tests.elsewhere.on_host_releases", *args], workdir="/src",
                     env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert done.exit_code == 0, done.output
    return json.loads(done.output.strip().splitlines()[-1])


def released(host, *args: str) -> dict:
    done = on_releases(host, "release", *args)
    assert done["exit"] == 0, done
    return done


@pytest.fixture(scope="module")
def hosts():
    pair = Hosts()
    try:
        pair.codes = pair.start()
        yield pair
    finally:
        pair.stop()


@pytest.fixture(scope="module")
def build_release(hosts) -> str:
    """The build host's first release, staged from a wheel of the working tree and accepted on its own
    admin's word (`--by`), on its own releases' root."""
    wheel = on_releases(hosts.build, "wheel")["wheel"]
    released(hosts.build, "stage", "--wheel", wheel, "--wheelhouse", WHEELHOUSE_INSIDE, "--node", "build1",
             "--by", "build-admin")
    released(hosts.build, "accept", "--node", "build1", "--by", "build-admin")
    return on_releases(hosts.build, "show")["current"]["release"]


def test_a_node_elsewhere_accepts_on_its_own_admins_word_and_its_post_appears_on_the_server(hosts, build_release):
    thread = on_releases(hosts.server, "thread", "build1", "ocx-node-build1")
    assert thread["root"] is not None and all(p["sender"] == "ocx-node-build1" for p in thread["posts"]), thread
    steps = [(p["facts"]["step"], p["facts"]["outcome"], p["facts"]["login"]) for p in thread["posts"]]
    assert steps == [("stage", "staged as next", "build-admin"), ("accept", "accepted", "build-admin")], steps
    assert thread["move"]["release"] == build_release and thread["move"]["step"] == "accept"
    assert thread["posts"][-1]["facts"]["node"] == hosts.codes["build_code"]


def test_set_to_follow_it_builds_and_accepts_the_checkin_the_server_accepted(hosts, build_release):
    released(hosts.build, "follow", "--node", "build1")
    checkin = on_releases(hosts.server, "ci-checkin")["checkin"]
    released(hosts.server, "stage", "--checkin", checkin, "--wheelhouse", WHEELHOUSE_INSIDE, "--node", "srv")
    released(hosts.server, "accept", "--node", "srv")
    server_release = on_releases(hosts.server, "show")["current"]["release"]

    def followed():
        current = on_releases(hosts.build, "show")["current"]
        return current if current and current["checkin"] == checkin else None

    try:
        current = wait_until(followed, FOLLOW_SECONDS, "the build host following the server's accept", every=5.0)
    except AssertionError as error:
        said = on_releases(hosts.build, "journal-of", "ocx-release-follow-")
        node = on(hosts.build, "journal", "ocx-node@build1.service")["journal"][-3000:]
        raise AssertionError(f"{error}\n{json.dumps(said)[-6000:]}\n--- node ---\n{node}") from None
    assert current["release"] != server_release  # its own build: the same check-in, never the server's files
    assert current["release"].split("-")[0] == checkin[:16]

    def posted_accept():  # the accept moves `current` first, then its services, then posts (cli_release.accept)
        posts = on_releases(hosts.server, "thread", "build1", "ocx-node-build1")["posts"]
        return posts[-1] if posts and posts[-1].get("facts", {}).get("outcome") != "staged as next" else None

    last = wait_until(posted_accept, POSTED_SECONDS, "the build host's accept posted on the server", every=2.0)
    assert last["sender"] == "ocx-node-build1" and last["facts"]["outcome"] == "accepted", last
    server_accept = on_releases(hosts.server, "thread", "srv", "ocx-node")["move"]["post"]
    assert f"followed srv's accept {server_accept}" in last["facts"]["login"], last
    status = {n["name"]: n for n in on(hosts.server, "status")["result"]["nodes"]}
    assert status["srv"]["release"] == server_release and status["build1"]["release"] == current["release"]


def test_an_admins_request_in_its_thread_is_carried_out_by_the_node_elsewhere(hosts, build_release):
    """D46 through D37: the server's admin asks build1 to roll back in its releases thread; the server's
    node tells build1 the request with its sender's letters, and build1 rolls back and answers it."""
    before = on_releases(hosts.build, "show")
    assert before["previous"] is not None, before  # after the followed accept: its own first release
    root = on_releases(hosts.server, "thread", "build1", "ocx-node-build1")["root"]
    text = f"```json\n{json.dumps({'ocx_release': 'rollback', 'node': hosts.codes['build_code']})}\n```\n"
    request = on(hosts.server, "reply", root, text)["post"]

    def answered():
        posts = on_releases(hosts.server, "thread", "build1", "ocx-node-build1")["posts"]
        return [p for p in posts if p["facts"] and p["facts"].get("step") == "rollback"
                and p["sender"] == "ocx-node-build1"]

    found = wait_until(answered, 300, "build1's answer to the roll-back request", every=2.0)
    assert len(found) == 1 and found[0]["facts"]["outcome"] == "rolled back", found
    assert found[0]["facts"]["login"] == "admin"
    after = on_releases(hosts.build, "show")
    assert after["current"]["release"] == before["previous"]["release"] == found[0]["facts"]["release"]
    assert request != found[0]["post"]
    status = {n["name"]: n for n in on(hosts.server, "status")["result"]["nodes"]}
    assert status["build1"]["release"] == before["previous"]["release"]


def test_a_request_whose_command_was_killed_after_its_answer_is_not_answered_twice(hosts, build_release):
    """C4 through D37: build1's command for a roll-back request is cut off (SIGKILL) after its answer
    reached the server and before its claim said so; its command run again completes it and finds the
    answer from the server's node (its clone cannot vouch for a sender), so the request has one answer."""
    before = on_releases(hosts.build, "show")
    root = on_releases(hosts.server, "thread", "build1", "ocx-node-build1")["root"]
    assert on_releases(hosts.build, "cut", "build1", "release-posted")["waiting"]
    text = f"```json\n{json.dumps({'ocx_release': 'rollback', 'node': hosts.codes['build_code']})}\n```\n"
    request = on(hosts.server, "reply", root, text)["post"]

    def answers():
        posts = on_releases(hosts.server, "thread", "build1", "ocx-node-build1")["posts"]
        return [p for p in posts if p["sender"] == "ocx-node-build1" and p["reply_to"] == request]

    found = wait_until(answers, 300, "build1's answer to the roll-back request", every=2.0)
    wait_until(lambda: not on_releases(hosts.build, "cut", "build1")["waiting"], 60, "the command's cut", every=1.0)
    again = released(hosts.build, "rollback", "--request", request, "--node", "build1")
    assert "whose command ended before its answer: rolled back" in again["out"], again
    assert len(answers()) == 1 and found[0]["facts"]["outcome"] == "rolled back", (answers(), again)
    after = on_releases(hosts.build, "show")
    assert after["current"]["release"] == before["previous"]["release"], (before, after)  # moved once
    assert "was acted on already" in released(hosts.build, "rollback", "--request", request, "--node", "build1")["out"]
    assert len(answers()) == 1
