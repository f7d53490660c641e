"""The feeder's epoll wait (inside_run/poller.py) on real descriptors, and what a session's feeder
imports to start: neither `socket` nor `selectors` nor what they pull in (docs/node.md)."""
import os
import socket
import subprocess
import sys
from pathlib import Path

from ocx.inside_run.poller import EVENT_READ, EVENT_WRITE, Poller

ROOT = Path(__file__).resolve().parents[2]


def ready(poller: Poller) -> dict[object, int]:
    return {key.data: events for key, events in poller.select()}


def test_a_pipe_is_readable_once_written_and_its_writer_writable_as_asked():
    poller = Poller()
    reader, writer = os.pipe()
    poller.register(writer, EVENT_WRITE, "out")
    assert ready(poller) == {"out": EVENT_WRITE}
    poller.register(reader, EVENT_READ, "in")
    os.write(writer, b"x")
    assert ready(poller) == {"out": EVENT_WRITE, "in": EVENT_READ}
    poller.unregister(writer)
    assert ready(poller) == {"in": EVENT_READ}
    os.read(reader, 1)
    poller.modify(reader, EVENT_READ, "in again")
    os.write(writer, b"y")
    assert ready(poller) == {"in again": EVENT_READ}  # the data handed back is the newest given
    os.close(reader)
    os.close(writer)


def test_a_peer_gone_reads_as_readable_and_a_write_only_registration_is_not_woken_for_reading():
    poller = Poller()
    mine, theirs = socket.socketpair()
    poller.register(mine, EVENT_READ, "sock")  # anything with fileno()
    theirs.close()
    assert ready(poller) == {"sock": EVENT_READ}
    assert mine.recv(10) == b""  # what the read then sees: the end
    other, peer = socket.socketpair()
    peer.sendall(b"keys")
    poller.register(other, EVENT_WRITE, "writer")
    assert ready(poller) == {"sock": EVENT_READ, "writer": EVENT_WRITE}  # the keys waiting are not its events
    for s in (mine, other, peer):
        s.close()


def test_a_sessions_feeder_starts_without_socket_selectors_or_their_imports():
    heavy = ["socket", "selectors", "functools", "enum", "collections", "subprocess", "typing", "pathlib"]
    code = ("import sys; import ocx.inside_run.feeder, ocx.inside_run.terminal, ocx.node.inotify; "
            f"print(sorted(set(sys.modules) & set({heavy!r})))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path.append({str(ROOT)!r}); {code}"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
