"""Failures met against a real `fossil server` pass or are final by the type the layer gave them (C4):
a stopped server, a proxy answering 503 in its place, a locked repository file pass; a refused
login and a bad argument are final."""
from __future__ import annotations

import http.server
import socket
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from ocx.fossil import admin, faults
from ocx.fossil.fossil_failure import Cause, FossilError
from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone
from ocx.fossil.web import WebError, WebSession

from .conftest import Served, start_served

pytestmark = pytest.mark.fossil


@dataclass(frozen=True)
class _Stopped:
    base_url: str
    passwords: dict[str, str]


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Stopped]:
    """A repository whose server has stopped: its address refuses connections. The address is a
    port bound here and never listened on, not the stopped server's own port, which a child
    of that server still exiting, or another server a busy machine starts meanwhile, may hold."""
    served = start_served(tmp_path_factory.mktemp("stopped"), {"alice": "i4"})
    served.server.stop()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield _Stopped(f"http://127.0.0.1:{held.getsockname()[1]}", served.passwords)


class _Unavailable(http.server.BaseHTTPRequestHandler):
    """What a proxy answers for a Fossil server that is restarting behind it."""

    def _unavailable(self) -> None:
        body = b"<html><body>503 Service Unavailable</body></html>"
        self.send_response(503)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _unavailable

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def unavailable() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_stopped_server_passes(stopped, tmp_path):
    with pytest.raises(FossilError) as cloning:
        CallerClone.create(tmp_path / "c.fossil", stopped.base_url, "alice", stopped.passwords["alice"],
                           home=tmp_path / "home")
    assert cloning.value.cause is Cause.UNREACHABLE and faults.passes(cloning.value)
    with pytest.raises(WebError) as logging_in:
        WebSession(stopped.base_url, "alice", stopped.passwords["alice"], timeout=10)
    assert isinstance(logging_in.value.__cause__.reason, ConnectionRefusedError)
    assert faults.passes(logging_in.value)


def test_a_server_error_passes(served, unavailable, tmp_path):
    with pytest.raises(FossilError) as cloning:
        CallerClone.create(tmp_path / "c.fossil", unavailable, "alice", served.passwords["alice"],
                           home=tmp_path / "home")
    assert (cloning.value.cause, cloning.value.http_status) == (Cause.SERVER_ERROR, 503)
    assert faults.passes(cloning.value)
    session = WebSession(unavailable, "alice", None, cookie="fossil-x=y")
    with pytest.raises(WebError) as asking:
        session.page_json("/ext/ocx")
    assert asking.value.status == 503 and faults.passes(asking.value)


def test_a_locked_repository_file_passes(served):
    holder = sqlite3.connect(served.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError) as reading:
            with Repository(served.path, busy_timeout=0) as repository:
                repository.user("alice")
        with pytest.raises(FossilError) as writing:  # Fossil waits out its own busy timeout first
            admin.set_capabilities(served.path, "bob", "i4", home=served.home)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert reading.value.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY and faults.passes(reading.value)
    assert writing.value.cause is Cause.BUSY and faults.passes(writing.value)


def test_a_refused_login_is_final(served, tmp_path):
    with pytest.raises(FossilError) as cloning:
        CallerClone.create(tmp_path / "c.fossil", served.base_url, "alice", "not-her-password",
                           home=tmp_path / "home")
    assert cloning.value.cause is Cause.OTHER and faults.passes(cloning.value) is False
    with pytest.raises(WebError) as logging_in:
        WebSession(served.base_url, "alice", "not-her-password")
    assert logging_in.value.status is not None and faults.passes(logging_in.value) is False


def test_a_bad_argument_is_final(served):
    with pytest.raises(FossilError) as changing:
        run_fossil(["user", "capabilities", "nobody-of-that-name", "i", "-R", str(served.path)], home=served.home)
    assert changing.value.cause is Cause.NO_SUCH_USER and faults.passes(changing.value) is False
    with pytest.raises(WebError) as reading:  # Fossil answers an artifact it does not have with a redirect
        served.web("alice").raw("0" * 40)
    assert reading.value.status == 302 and faults.passes(reading.value) is False
