"""The first ```json block holding `ocx` is the message (D7, D8), on the real
node in the systemd container: an admin's post whose first block is a record
with a repeated key, NaN, or a 4,301-digit number, and whose second block,
further down, is a plain record, is answered `refused` naming the first
block's field; the second block never runs. A flaw in the envelope leaves no
message at all: no answer, no run. The node answers the next record."""
import json

import pytest

from .harness import systemctl

pytestmark = pytest.mark.systemd

FLAWS = {"user": '"someone-else"', "budget": '{"wall": "2m", "cpu": NaN}', "objective": "9" * 4301}


def two_blocks(first: str, second: dict) -> str:
    return (f"A record.\n\n```json\n{first}\n```\n\nAnd, further down, in case:\n\n```json\n"
            f"{json.dumps(second)}\n```\n")


def with_literal(record: dict, key: str, literal: str) -> str:
    """RECORD's JSON with KEY set to LITERAL as written: `user` a second time (a repeated key), any other key
    in place of its value."""
    text = json.dumps({k: v for k, v in record.items() if k != key or key == "user"})
    return text[:-1] + f', "{key}": {literal}}}'


@pytest.mark.parametrize("key", sorted(FLAWS))
def test_a_flawed_first_block_is_refused_and_the_second_never_runs(node, key) -> None:
    hidden = node.record(objective="exit 0")
    first = with_literal(node.record(objective="sleep"), key, FLAWS[key])
    record = node.admin.web(node.url).new_thread("OCX record, two blocks", two_blocks(first, hidden))
    response = node.response(record, timeout=90)
    assert response.outcome.value == "refused" and f"{key}" in response.note, response.note
    assert systemctl("show", node.unit(record), "-p", "LoadState", "--value").strip() != "loaded"


def test_a_flawed_envelope_is_no_message_and_the_node_answers_the_next_record(node) -> None:
    hidden = node.record(objective="sleep")  # read, it would stay open: its directory would be there
    first = json.dumps(node.record(objective="sleep"))[:-1] + f', "node": "{node.server_code}"}}'  # `node` twice
    ignored = node.admin.web(node.url).new_thread("OCX record, two nodes", two_blocks(first, hidden))
    node.barrier()  # a later record answered: everything before it was read and acted on
    assert node.responses(ignored) == [] and not (node.config.state_dir / "records" / ignored).exists()
