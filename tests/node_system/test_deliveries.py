"""Deliveries to a live session in the systemd container (C3, D13, D18).

Check-ins are pushed from real clones by real logins, posts and ticket
changes go through the web page; the session program (objective `echo`)
prints every line it reads on its standard input, and each is compared,
whole, with the line D13 frames.
"""
import json
import secrets
import subprocess
import threading
import time

import pytest

from ocx.protocol.deliveries import change_delivery, checkin_delivery, post_delivery, record_delivery

from .harness import fenced, journal, wait_for

pytestmark = pytest.mark.systemd


def delivered(node, unit: str) -> list[dict]:
    lines = journal(unit).splitlines()
    return [json.loads(line.removeprefix("delivery ")) for line in lines if line.startswith("delivery ")]


def expected(delivery) -> dict:
    return json.loads(delivery.line())


def session(node, **fields) -> str:
    record = node.post(node.record(objective="echo", budget={"wall": "5m"}, **fields))
    wait_for(lambda: len(delivered(node, node.unit(record))) == 1, 60, 0.2, "the first delivery")
    return record


def test_every_kind_reaches_the_session_as_d13_frames_it_and_every_filter_holds(node):
    heard = node.login(f"heard-{secrets.token_hex(2)}", "gio234")
    unheard = node.login(f"unheard-{secrets.token_hex(2)}", "gio234")
    branch = f"deliver-{secrets.token_hex(2)}"
    record = session(node, hears=[node.admin.name, heard.name], checkins=[branch])
    unit = node.unit(record)

    from_admin = node.reply(record, "A question from the admin.")
    node.reply(record, "Not heard: not delivered.", by=unheard)
    from_heard = node.reply(record, "A question from a heard user.", by=heard)
    elsewhere = node.admin.web(node.url).new_thread("Another thread", "Not the record's place.")

    heard_clone = node.clone_of(heard)
    checkout = heard_clone.open_checkout(node.home / f"co-{secrets.token_hex(3)}")
    (checkout / "a.txt").write_text("one")
    on_branch = heard_clone.commit(checkout, "on the record's branch", branch=branch)
    (checkout / "a.txt").write_text("two")
    heard_clone.commit(checkout, "on another branch", branch=f"other-{secrets.token_hex(2)}")
    # A U card naming the admin, pushed by an unheard login: the sender is who pushed it (F2).
    forger = node.clone_of(unheard)
    forged_checkout = forger.open_checkout(node.home / f"co-{secrets.token_hex(3)}", branch)
    (forged_checkout / "b.txt").write_text("forged")
    forged = forger.commit(forged_checkout, "a U card saying admin", user_override=node.admin.name)

    want = [expected(record_delivery(record, "echo")),
            expected(post_delivery(from_admin, node.admin.name, "A question from the admin.")),
            expected(post_delivery(from_heard, heard.name, "A question from a heard user.")),
            expected(checkin_delivery(on_branch, branch, heard.name)),
            expected(checkin_delivery(forged, branch, unheard.name))]
    # A last post from the admin, after all of them: deliveries keep the order of receipt, so once it
    # is delivered nothing before it is still to come.
    last = node.reply(record, "The last post.")
    want.append(expected(post_delivery(last, node.admin.name, "The last post.")))
    wait_for(lambda: len(delivered(node, unit)) >= len(want), 60, 0.2, "six deliveries")
    assert delivered(node, unit) == want
    assert elsewhere not in json.dumps(delivered(node, unit))
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"


def test_a_change_to_the_records_ticket_is_delivered(node):
    web = node.admin.web(node.url)
    ticket = web.new_ticket("A ticket with a session", "The session hears this ticket.")
    fields = node.record(objective="echo", budget={"wall": "5m"})
    web.ticket_change(ticket, fenced(fields))
    with node.repository() as repository:
        record = next(c.hash for c in repository.ticket_changes(ticket) if fields["user"] in (c.comment or ""))
    unit = node.unit(record)
    wait_for(lambda: len(delivered(node, unit)) == 1, 60, 0.2, "the first delivery")
    web.ticket_change(ticket, "Please look at the second paragraph.")
    with node.repository() as repository:
        change = next(c.hash for c in repository.ticket_changes(ticket) if "second paragraph" in (c.comment or ""))
    wait_for(lambda: len(delivered(node, unit)) == 2, 60, 0.2, "the change delivered")
    assert delivered(node, unit)[1] == expected(
        change_delivery(change, ticket, node.admin.name, "Please look at the second paragraph."))
    node.admin.web(node.url).ticket_change(ticket, fenced(
        {"ocx": 1, "kind": "stop", "node": node.server_code, "stops": record}, "Stop."))
    wait_for(lambda: subprocess.run(["systemctl", "is-active", unit], capture_output=True, text=True)
             .stdout.strip() != "active", 60, 0.2, "the stopped session")


def burst(node, record: str, count: int) -> list[str]:
    web = node.admin.web(node.url)  # one logged-in session: as fast as the server takes them
    return [web.reply(record, f"burst post {i}") for i in range(count)]


def test_200_posts_arrive_complete_and_in_order(node):
    record = session(node)
    posted = burst(node, record, 200)
    unit = node.unit(record)
    wait_for(lambda: len(delivered(node, unit)) >= 201, 120, 0.5, "201 deliveries")
    assert [d["hash"] for d in delivered(node, unit)] == [record, *posted]
    node.stop(record)
    node.response(record)


def test_200_posts_arrive_complete_and_in_order_while_the_node_is_killed(node):
    record = session(node)
    unit = node.unit(record)
    done = threading.Event()
    kills = []

    def kill_the_node():
        while not done.is_set():
            time.sleep(0.4)
            # OCX's own processes: the root service (and the wake units that poke it).
            subprocess.run(["systemctl", "kill", "--signal=KILL", f"ocx-node@{node.name}.service"],
                           capture_output=True)
            kills.append(time.monotonic())

    killer = threading.Thread(target=kill_the_node)
    killer.start()
    try:
        posted = burst(node, record, 200)
    finally:
        done.set()
        killer.join()
    node.reply(record, "after the kills")  # wakes the node once more, if the last kill took its last pass
    wait_for(lambda: len(delivered(node, unit)) >= 202, 180, 0.5, "202 deliveries")
    hashes = [d["hash"] for d in delivered(node, unit)]
    assert hashes[:201] == [record, *posted] and len(hashes) == 202 and len(set(hashes)) == 202
    assert len(kills) > 5
    assert subprocess.run(["systemctl", "is-active", unit], capture_output=True, text=True).stdout.strip() == "active"
    node.stop(record)
    node.response(record)


def test_nothing_is_kept_for_a_closed_record(node):
    record = session(node)
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"
    inbox = node.config.state_dir / "records" / record / "inbox"
    wait_for(lambda: not inbox.exists(), 30, 0.2, "the inbox removed")
    node.reply(record, "Too late: the record is closed.")
    node.barrier()
    assert not inbox.exists()
    assert [d["delivery"] for d in delivered(node, node.unit(record))] == ["record"]
