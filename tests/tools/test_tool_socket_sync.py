"""The tool socket service follows the records it serves from inotify's events, looking only at
the records an event names (docs/node.md, 'Measured': in a burst of 100 runs it looked at every record again for
every mark any run wrote, 6 % of the machine's CPU). No server is needed: which runs get a socket
is decided from the record directories alone."""
import secrets
import shutil
import threading
from pathlib import Path

import pytest

from ocx.node.config import NodeConfig
from ocx.node.record_dirs import RecordDir
from ocx.node.states import Mark
from ocx.protocol import parse_message
from ocx.protocol.decide import OpenRecord
from ocx.tool_service.tool_socket import ToolSocketServer
from tests.node_system.harness import wait_for
from tests.protocol.examples import record


@pytest.fixture
def node():
    config = NodeConfig(name=f"sockets-{secrets.token_hex(3)}", repository="/nonexistent/r.fossil",
                        url="http://127.0.0.1:9")
    yield config
    shutil.rmtree(config.state_dir, ignore_errors=True)


def opened(no_password: bool = True, network: bool = True) -> OpenRecord:
    restrict = {"no_password": True} if no_password else {}
    message = record(restrict=restrict, sandbox={"network": network, "read_only": [], "read_write": []})
    return OpenRecord(secrets.token_hex(32), parse_message(message), "t" * 40)


def save(config: NodeConfig, run: OpenRecord) -> RecordDir:
    directory = RecordDir.of(config, run.hash)
    directory.save(run, "forum")
    return directory


def socket_of(directory: RecordDir) -> Path:
    return directory.tools / "tools.sock"


@pytest.fixture
def serving(node):
    server = ToolSocketServer(node, "c" * 40)
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    yield server, thread
    stop.set()
    thread.join(10)


def test_only_the_records_an_event_names_are_looked_at(node, serving):
    server, thread = serving
    served = [save(node, opened()) for _ in range(30)]
    with_password = save(node, opened(no_password=False))
    no_network = save(node, opened(no_password=False, network=False))  # D34: served by its socket
    thread.start()
    wait_for(lambda: all(socket_of(d).exists() for d in served + [no_network]), 60, 0.05, "every run's socket")
    assert not socket_of(with_password).exists()  # a run that holds its password has none (C6)

    before = server.looked_at
    for directory in served:  # what a burst writes: each run's own marks, many times
        for mark in (Mark.STARTING, Mark.STARTED, Mark.PREPARED):
            directory.mark(mark, {"at": 0}, f"ocx-run-{directory.hash[:12]}")
    served[0].mark(Mark.ANSWERED, {})
    wait_for(lambda: not socket_of(served[0]).exists(), 60, 0.05, "the answered record's socket gone")
    assert server.looked_at - before == 1  # the answered one; no run's mark made it look at another
    assert all(socket_of(d).exists() for d in served[1:])


def test_a_record_saved_later_gets_its_socket_and_a_removed_one_loses_it(node, serving):
    server, thread = serving
    first = save(node, opened())
    thread.start()
    wait_for(lambda: socket_of(first).exists(), 60, 0.05, "the first run's socket")
    later = save(node, opened())  # its directory made while the service watches
    wait_for(lambda: socket_of(later).exists(), 60, 0.05, "the later run's socket")
    gone = first.path.with_name("." + first.hash)  # as cleanup.py removes an answered record's
    first.path.rename(gone)
    shutil.rmtree(gone)
    wait_for(lambda: first.hash not in server.runs, 60, 0.05, "the removed record's socket closed")
    assert later.hash in server.runs
