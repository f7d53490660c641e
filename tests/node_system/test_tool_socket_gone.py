"""D24: a `no_password` run whose tool socket is gone is ended and answered
`unenforced`; a brief restart of the tool service ends nothing
(ocx/node/socket_served.py says what "gone" is). In the systemd container."""
import pytest

from ocx.node.record_dirs import RecordDir
from ocx.node.states import Mark
from ocx.node.socket_served import socket_accepts, tool_socket_path
from ocx.protocol import Outcome
from ocx.tools.socket_call import ask

from .harness import journal, node_idle, ocx, systemctl, wait_for

pytestmark = pytest.mark.systemd


def tools(node) -> str:
    return f"ocx-tools@{node.name}.service"


def prop(unit: str, name: str) -> str:
    return systemctl("show", unit, "-p", name, "--value").strip()


def open_socket_run(node, objective: str = "echo") -> tuple[str, RecordDir, str]:
    """A no_password session running its program, its tool socket answering."""
    fields = node.record(objective=objective, restrict={"no_password": True}, budget={"wall": "5m"})
    record = node.post(fields)
    wait_for(lambda: prop(node.unit(record), "ActiveState") == "active", 60, what="the run")
    record_dir = RecordDir.of(node.config, record)
    wait_for(lambda: socket_accepts(tool_socket_path(record_dir)), 30, what="its tool socket")
    return record, record_dir, fields["user"]


def pass_done(node) -> None:
    """The node's passes ended: its service says `idle` once no poke is pending (D26, serve.py)."""
    wait_for(lambda: node_idle(node.name), 60, 0.2, what="the node's pass to end")


def test_a_brief_restart_of_the_tool_service_ends_no_run(node):
    record, record_dir, user = open_socket_run(node)
    before = int(prop(tools(node), "NRestarts") or 0)
    systemctl("kill", "--signal=KILL", tools(node))  # Restart=on-failure brings it back; its stop step pokes the node
    wait_for(lambda: int(prop(tools(node), "NRestarts") or 0) == before + 1 and prop(tools(node), "ActiveState") == "active",
             30, what="the tool service back")
    # A later pass, proven by a delivery the run echoes, also sees the socket back.
    node.reply(record, "still there after the restart?")
    wait_for(lambda: "still there after the restart?" in journal(node.unit(record)), 60,
             what="the delivery after the restart")
    pass_done(node)
    assert prop(node.unit(record), "ActiveState") == "active"
    assert not record_dir.marked(Mark.UNENFORCED) and node.responses(record) == []
    answer = ask(tool_socket_path(record_dir), "status", {})
    assert answer["stopped"] is None and answer["result"]["login"] == user
    node.stop(record)
    assert node.response(record).outcome is Outcome.stopped


def test_the_tool_service_stopped_for_good_answers_the_run_unenforced(node):
    record, _, _ = open_socket_run(node)
    systemctl("stop", tools(node))  # not a failure: it does not restart
    try:
        response = node.response(record, timeout=90)
    finally:
        systemctl("start", tools(node))
    assert response.outcome is Outcome.unenforced, response
    assert "tool socket is gone" in response.note and "inactive" in response.note, response.note
    wait_for(lambda: prop(node.unit(record), "ActiveState") in ("inactive", "failed", ""), 30, what="the run ended")


def test_the_socket_file_removed_answers_the_run_unenforced(node):
    record, record_dir, _ = open_socket_run(node)
    tool_socket_path(record_dir).unlink()  # the service still runs, but nothing can reach it
    node.reply(record, "any request wakes the node (D26)")
    response = node.response(record, timeout=90)
    assert response.outcome is Outcome.unenforced, response
    assert "accepts no connection" in response.note, response.note
    assert prop(tools(node), "ActiveState") == "active"  # the other runs' sockets are still served
