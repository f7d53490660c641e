"""D28 in the systemd container: a post held for moderation is never a message
and never a delivery, even from a user the record hears."""
import json
import secrets

import pytest

from .harness import fenced, journal, wait_for

pytestmark = pytest.mark.systemd


def delivered(node, record: str) -> list[dict]:
    lines = journal(node.unit(record)).splitlines()
    return [json.loads(line.removeprefix("delivery ")) for line in lines if line.startswith("delivery ")]


def test_a_held_post_is_neither_delivered_nor_a_message(node):
    held_login = node.login(f"held-{secrets.token_hex(2)}", "23")  # may post, but held (no `4`)
    record = node.post(node.record(objective="echo", hears=[node.admin.name, held_login.name], budget={"wall": "2m"}))
    wait_for(lambda: len(delivered(node, record)) == 1, 60, 0.2, "the first delivery")
    held = node.reply(record, "A question held for a moderator.", by=held_login)
    stop_text = fenced({"ocx": 1, "kind": "stop", "node": node.server_code, "stops": record}, "Stop, from a held post.")
    held_stop = node.reply(record, stop_text, by=held_login)
    with node.repository() as repository:
        assert repository.post(held).pending_moderation and repository.post(held_stop).pending_moderation
    published = node.reply(record, "A question from the admin.")
    last = node.reply(record, "The admin's last post.")  # delivered in order: nothing held comes before it
    wait_for(lambda: len(delivered(node, record)) == 3, 30, 0.2, "the admin's posts delivered")
    kinds = [(d["delivery"], d["hash"]) for d in delivered(node, record)]
    assert kinds == [("record", record), ("post", published), ("post", last)]
    assert not node.responses(record)  # nothing written for the held posts (its sender lacks admin too)
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"
