"""A joined node and a join token as an attacker uses them, on two systemd containers (D29, D36-D38, C5):
a join naming the server's own server-code is refused and no grant for the server's runs can be had; a
sender demoted mid-run leaves no run user its letters, on either node; a taken name is refused, a node
taken off the list leaves nothing that writes, and its follower stops asking. Each time the nodes still
answer the next record."""
from __future__ import annotations

import pytest

from .hosts import SERVER_URL, Hosts, needs_engine, on, put_file, wait_until
from .records_on_hosts import answer, answers, record_for, running, unit_of

pytestmark = needs_engine


@pytest.fixture(scope="module")
def hosts():
    pair = Hosts()
    try:
        pair.codes = pair.start()
        yield pair
    finally:
        pair.stop()


def on_nodes(host, *args: str) -> dict:
    done = host.exec(["/opt/ocx/venv/bin/python", "-m", "tests.elsewhere.on_host_nodes", *args], workdir="/src",
                     env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert done.exit_code == 0, done.output
    import json

    return json.loads(done.output.strip().splitlines()[-1])


def running_here(hosts, record: str) -> None:
    unit = unit_of(hosts.codes["server_code"], record)
    wait_until(lambda: on(hosts.server, "active", unit).get("SubState") == "running", 120, f"{unit} running")


def test_a_join_naming_the_server_s_code_is_refused_and_the_server_s_runs_stay_its_own(hosts):
    here = hosts.codes["server_code"]
    made = on(hosts.server, "join-token", "thief")
    put_file(hosts.build, "/root/thief-token", made["token"] + "\n")
    attack = on_nodes(hosts.build, "attack-join", SERVER_URL, "/root/thief-token", "thief", here)
    assert not attack["joined"] and attack["refused"][0] == "server_code", attack
    assert "thief" not in {n["name"] for n in on(hosts.server, "status")["result"]["nodes"]}
    # An open record of the server's node: a joined node user asks for its run user's password.
    target = record_for(hosts, node=here, objective="sleep")
    running_here(hosts, target["record"])
    stolen = on_nodes(hosts.build, "grant-as", "build1", target["record"])
    assert stolen["user"] is None and stolen["refused"][0] == "record", stolen
    on(hosts.server, "stop", here, target["record"])
    assert answer(hosts, target["record"], node="server")[0] == "stopped"
    assert on(hosts.server, "letters", target["user"])["letters"] == ""
    after = record_for(hosts, node=here, objective="exit 0")["record"]
    assert answer(hosts, after, node="server")[0] == "exited"


def test_a_sender_demoted_mid_run_leaves_no_run_user_its_letters_on_either_node(hosts):
    """C5: the withdrawal asks no one's current rights (before, the build host's was refused)."""
    on(hosts.server, "login", "ada", "s")
    there = record_for(hosts, by="ada", objective="sleep 20")
    here = record_for(hosts, by="ada", node=hosts.codes["server_code"], objective="sleep 20")
    running(hosts, there["record"])
    running_here(hosts, here["record"])
    assert on(hosts.server, "letters", there["user"])["letters"] and on(hosts.server, "letters", here["user"])["letters"]
    on(hosts.server, "give", "ada", "i")  # demoted while both run
    assert answer(hosts, there["record"])[0] == "exited"
    assert answer(hosts, here["record"], node="server")[0] == "exited"
    for user in (there["user"], here["user"]):
        wait_until(lambda: on(hosts.server, "letters", user)["letters"] == "", 60, f"{user}'s letters withdrawn")
    assert answer(hosts, record_for(hosts, objective="exit 0")["record"])[0] == "exited"


def test_a_taken_name_is_refused_and_a_node_taken_off_the_list_leaves_nothing_that_writes(hosts):
    made = on(hosts.server, "join-token", "build2")
    put_file(hosts.build, "/root/join-token", made["token"] + "\n")
    joined = on(hosts.build, "build-join", "build2", SERVER_URL, "/root/join-token")
    assert joined["exit"] == 0 and "configuration /etc/ocx/build2.json: created" in joined["out"], joined
    code = on(hosts.build, "code", "build2")["server_code"]
    # Another host joining under the taken name, with a token an admin made without saying "replace":
    second = on(hosts.server, "join-token", "build2")
    put_file(hosts.build, "/root/join-token-2", second["token"] + "\n")
    taken = on_nodes(hosts.build, "attack-join", SERVER_URL, "/root/join-token-2", "build2", "")
    assert not taken["joined"] and taken["refused"][0] == "name" and code in taken["refused"][1], taken
    # A run of build2's is going when an admin takes build2 off the list.
    open_one = record_for(hosts, node=code, objective="sleep", budget={"wall": "15s"})
    wait_until(lambda: on(hosts.build, "active", unit_of(code, open_one["record"])).get("SubState") == "running",
               120, "build2's run")
    removed = on_nodes(hosts.server, "remove", "build2", "admin")
    assert removed["exit"] == 0, removed
    assert f"run user {open_one['user']}: letters withdrawn" in removed["out"], removed
    assert f"record {open_one['record']}: open" in removed["out"], removed  # its wall has not passed (D31)
    assert on(hosts.server, "letters", open_one["user"])["letters"] == ""
    assert on(hosts.server, "letters", "ocx-node-build2")["letters"] == ""
    assert "build2" not in {n["name"] for n in on(hosts.server, "status")["result"]["nodes"]}
    # D38: refused by a server it reaches, its follower says so once and stops; its unit does not restart it.
    stopped = wait_until(lambda: (lambda f: f if f["ActiveState"] in ("failed", "inactive") else None)(
        on_nodes(hosts.build, "follower", "build2")), 150, "build2's follower refused and stopped")
    assert stopped["refusals"] == 1 and stopped["exited_78"] and stopped["NRestarts"] == "0", stopped
    # Its record, once its wall has passed, is answered lost by an admin, once (D31).
    wait_until(lambda: on(hosts.server, "lost", open_one["record"])["stopped"] is None, 90, "the wall to pass")
    assert [(f[0], f[3]) for f in answers(hosts, open_one["record"])] == [("lost", "admin")]
    assert answer(hosts, record_for(hosts, objective="exit 0")["record"])[0] == "exited"  # build1 answers on
