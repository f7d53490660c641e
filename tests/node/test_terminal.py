"""The feeder holding a session's terminal (D32), run as a real process on a
real pseudo-terminal; the attacher is a real unix socket client (no systemd needed)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from ocx.cli.attaching import DETACHED, ENDED, HUNG_UP, HangUps, connect, relay
from ocx.inside_run.terminal import JournalLines

from .test_feeder import READER, drop

# Reads lines from its terminal and answers each: "typed LINE"; "tty" says what its terminal is.
ANSWERER = r"""
import os, sys
print("ready", flush=True)
for line in sys.stdin:
    line = line.rstrip("\n")
    if line == "tty":
        print("tty", os.isatty(0), os.tcgetpgrp(0) == os.getpgrp() == os.getsid(0), flush=True)
    elif line == "quit":
        sys.exit(5)
    else:
        print("typed " + line, flush=True)
"""


def feeder(inbox: Path, sock: Path, *program: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ocx.inside_run.feeder", str(inbox), "--terminal", str(sock), "--",
                             *program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def listening(running: subprocess.Popen, sock_path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not sock_path.exists():
        if running.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the feeder never listened: {running.communicate()}")
        time.sleep(0.02)


def read_until(sock: socket.socket, wanted: bytes, timeout: float = 30.0) -> bytes:
    seen = b""
    sock.settimeout(timeout)
    while wanted not in seen:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"ended before {wanted!r}; saw {seen!r}")
        seen += chunk
    return seen


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    (tmp_path / "inbox").mkdir()
    return tmp_path / "inbox"


def test_deliveries_pass_whole_and_in_order_under_a_terminal_with_no_line_limit_and_no_echo(tmp_path, inbox):
    got = tmp_path / "got.jsonl"
    drop(inbox, 1, {"n": 1, "text": "first"})
    running = feeder(inbox, tmp_path / "t.sock", sys.executable, "-c", READER, "60", str(got), "3")
    for n in range(2, 61):
        drop(inbox, n, {"n": n, "text": "x" * (n * 173 % 9000), "é": "ü"})  # many beyond a terminal's 4095-byte line
    out, err = running.communicate(timeout=60)
    assert running.returncode == 3, err
    lines = got.read_text().splitlines()
    assert [json.loads(line)["n"] for line in lines] == list(range(1, 61))
    assert [len(json.loads(line)["text"]) for line in lines[1:]] == [n * 173 % 9000 for n in range(2, 61)]
    assert b'"n"' not in out  # nothing echoed into the journal


def test_output_reaches_the_journal_with_plain_line_ends_and_an_attacher_sees_it_and_types(tmp_path, inbox):
    sock_path = tmp_path / "t.sock"
    running = feeder(inbox, sock_path, sys.executable, "-c", ANSWERER)
    listening(running, sock_path)
    attacher = connect(sock_path)
    assert b"ready" in read_until(attacher, b"ready\r\n")  # the recent tail, as a terminal shows it
    attacher.sendall(b"hello there\r")  # Enter, as a terminal sends it
    read_until(attacher, b"typed hello there\r\n")
    attacher.sendall(b"tty\r")
    read_until(attacher, b"tty True True\r\n")  # its controlling terminal, its own session
    attacher.sendall(b"quit\r")
    attacher.settimeout(30)
    while attacher.recv(65536):  # the feeder closes it when the program ends
        pass
    out, _ = running.communicate(timeout=30)
    assert running.returncode == 5
    assert out == b"ready\ntyped hello there\ntty True True\n"
    assert not sock_path.exists()


def test_ctrl_c_from_an_attacher_interrupts_the_program_and_the_unit_ends_by_that_signal(tmp_path, inbox):
    sock_path = tmp_path / "t.sock"
    running = feeder(inbox, sock_path, sys.executable, "-c",
                     "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_DFL)\nprint('up', flush=True)\ntime.sleep(60)")
    listening(running, sock_path)
    attacher = connect(sock_path)
    read_until(attacher, b"up")
    attacher.sendall(b"\x03")
    assert running.wait(timeout=30) == -2


def test_the_relay_shows_output_passes_keys_and_stops_at_the_detach_key(tmp_path, inbox):
    sock_path = tmp_path / "t.sock"
    running = feeder(inbox, sock_path, sys.executable, "-c", ANSWERER)
    listening(running, sock_path)
    keys_read, keys_write = os.pipe()
    screen_read, screen_write = os.pipe()
    drop(inbox, 1, {"n": 1})  # a delivery while attached: a line to the program too
    screens = []

    def person() -> None:
        os.write(keys_write, b"one\r")
        screen = b""
        while b"typed one" not in screen or b'typed {"n": 1}' not in screen:
            screen += os.read(screen_read, 65536)
        screens.append(screen)
        os.write(keys_write, b"two\r\x1dnever sent\r")

    typist = threading.Thread(target=person, daemon=True)
    typist.start()
    assert relay(connect(sock_path), keys_read, screen_write) == DETACHED  # relay() wants the main thread
    typist.join(30)
    assert screens and b"ready" in screens[0]
    # The session goes on after a detach: another attacher finds it answering.
    again = connect(sock_path)
    again.sendall(b"three\r")
    shown = read_until(again, b"typed three")
    assert b"typed two" in shown and b"never sent" not in shown
    again.sendall(b"quit\r")
    no_keys, _keep_open = os.pipe()
    assert relay(again, no_keys, screen_write) == ENDED  # the program ended: the relay says so
    assert running.wait(timeout=30) == 5


@pytest.fixture
def reachable():
    """A directory another user can reach: pytest's own are root's alone, and /tmp may be (0700 on
    some machines); /var/tmp is everyone's, as the FHS says."""
    made = Path(tempfile.mkdtemp(prefix="ocx-terminal-", dir="/var/tmp"))
    os.chmod(made, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def test_a_peer_that_is_not_root_is_turned_away(tmp_path, inbox, reachable):
    if os.geteuid() != 0:
        pytest.skip("needs root to connect as another user")
    sock_path = reachable / "t.sock"
    running = feeder(inbox, sock_path, sys.executable, "-c", ANSWERER)
    listening(running, sock_path)
    os.chmod(sock_path, 0o777)
    probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ns.settimeout(10)\n"
             "print(repr(s.recv(100)))")
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    seen = subprocess.run([python, "-c", probe, str(sock_path)], user=65534, capture_output=True, text=True,
                          timeout=30)
    assert seen.stdout.strip() == "b''", seen  # closed at once: not even the tail
    root = connect(sock_path)
    assert b"ready" in read_until(root, b"ready")
    root.sendall(b"quit\r")
    assert running.wait(timeout=30) == 5
    os.rmdir(reachable)  # the feeder removed its socket


def test_journal_lines_turn_terminal_line_ends_into_newlines_across_chunks():
    lines = JournalLines()
    chunks = [b"one\r", b"\ntwo\r\nthree\r", b"\r\n", b"bare\rcr\r"]
    assert b"".join(lines(c) for c in chunks) + lines.rest() == b"one\ntwo\nthree\r\nbare\rcr\r"


RECORDER = r"""
import os, sys
want, out, seen = int(sys.argv[1]), open(sys.argv[2], "wb"), b""
while seen.count(b'"n": ') < want or b"END" not in seen:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    seen += chunk
    out.write(chunk)
    out.flush()
"""


def test_keystrokes_never_land_inside_a_delivery_line(tmp_path, inbox):
    got, sock_path = tmp_path / "got", tmp_path / "t.sock"
    running = feeder(inbox, sock_path, sys.executable, "-c", RECORDER, "40", str(got))
    listening(running, sock_path)
    attacher = connect(sock_path)
    lines = [json.dumps({"n": n, "text": "y" * (n * 331 % 6000)}) + "\n" for n in range(1, 41)]

    def node() -> None:
        for n in range(1, 41):
            drop(inbox, n, json.loads(lines[n - 1]))
            time.sleep(0.003)

    dropping = threading.Thread(target=node)
    dropping.start()
    typed = b""
    for k in range(300):
        keys = f"k{k}\r".encode()
        attacher.sendall(keys)
        typed += keys
        time.sleep(0.0005)
    dropping.join()
    attacher.sendall(b"END\r")
    typed += b"END\r"
    assert running.wait(timeout=60) == 0
    stream = got.read_bytes()
    for line in lines:  # each delivery whole, in order; what is left is exactly what was typed
        at = stream.find(line.encode())
        assert at >= 0, f"delivery {line[:20]} not found whole"
        stream = stream[:at] + stream[at + len(line):]
    assert stream == typed.replace(b"\r", b"\n")


def test_a_hang_up_ends_the_relay_and_not_the_process(tmp_path, inbox):
    sock_path = tmp_path / "t.sock"
    running = feeder(inbox, sock_path, sys.executable, "-c", ANSWERER)
    listening(running, sock_path)
    keys, _typist = os.pipe()
    screen_read, screen_write = os.pipe()
    hang_up = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGHUP))
    with HangUps() as hang_ups, connect(sock_path) as attacher:
        hang_up.start()
        assert relay(attacher, keys, screen_write, hang_ups) == HUNG_UP
    assert b"ready" in os.read(screen_read, 65536)  # it was attached, and showed the session
    with connect(sock_path) as again:
        again.sendall(b"quit\r")
    assert running.wait(timeout=30) == 5
