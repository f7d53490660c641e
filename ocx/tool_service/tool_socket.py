"""The tool socket of a `no_password` run (C6, D22, D34): served by the node,
outside the sandbox, one socket a run, reachable only from that run's unit.

Each open record that restricts `no_password` (or has no network, D34) gets
a socket in its record directory's `tools/` directory, which the run's unit
binds at TOOLS_INSIDE (ocx/node/run_layout.py); the node's state is hidden from every
run (D16), so no other run reaches it. Which socket a call came in on proves
the caller: the server runs the tool as that record's user, writing with a
password it sets and keeps only in memory.

Wire: one JSON line `{"tool": NAME, "input": {...}}` in, one JSON line (the
tool's answer) out. The path is reachable only through the run's own bind:
the node's state directory is root's alone (0700), so no other account
reaches it, and every other run has it hidden (D16). Each connection is
checked besides (SO_PEERCRED): a process of the record's own unit(s), or
root; anyone else is closed on before a byte is read. What a run sends is
bounded: REQUEST_BYTES in READ_SECONDS, and CONNECTIONS at once per run
(docs/security.md, 'Class 5'). `python -m ocx.tool_service.tool_socket NAME` serves a node's
runs (units/ocx-tools@.service); it watches the records directory with
inotify, so a new run's socket appears without a timer (D26).
"""
from __future__ import annotations

import json
import os
import selectors
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from ..fossil import admin
from ..node import config as node_config
from ..node.config import NodeConfig
from ..node.inotify import (
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_IGNORED,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    add_watch,
    events,
    watch,
)
from ..node.record_dirs import RecordDir, open_state, record_dirs
from ..node.record_store import RECORD_FILES
from ..node.run_layout import RunHome, unit_stem
from ..node.socket_served import SOCKET_NAME, served_by_socket, short_path
from ..node.spare import CLONE
from ..protocol.decide import OpenRecord
from ..systemd import notify
from ..systemd.cgroup import peer
from ..tools.caller import Caller
from ..tools.framework import Answer, Stopped, run_tool
from ..tools.registry import TOOLS

CHANGES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE
OWN_FILES = RECORD_FILES  # record.json among them (Mark.RECORD)
REQUEST_BYTES = 1 << 20  # the most one call may send: a tool's input is small
READ_SECONDS = 30.0  # the longest the service waits for a call's line, or for its answer to be taken
CONNECTIONS = 4  # calls of one run at once; more are closed at once


def socket_dir(record_dir: RecordDir) -> Path:
    return record_dir.tools


def _refusal(tool: str, field: str, why: str) -> dict[str, Any]:
    return Answer(tool=tool, dry_run=False, log=[], stopped=Stopped(field=field, why=why)).model_dump(mode="json")


class RunSocket:
    """One run's socket, and the password the node holds for its user."""

    def __init__(self, config: NodeConfig, server_code: str, record_dir: RecordDir, opened: OpenRecord,
                 clone: Path | None = None):
        self.config, self.opened, self.record_dir = config, opened, record_dir
        self.stem = unit_stem(server_code, opened.hash)
        self.clone = clone or RunHome(self.stem).on_host / CLONE
        self._password: str | None = None
        self._lock = threading.Lock()
        self.calls = threading.BoundedSemaphore(CONNECTIONS)
        directory = socket_dir(record_dir)
        directory.mkdir(mode=0o755, exist_ok=True)
        self.path = directory / SOCKET_NAME
        self.path.unlink(missing_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with short_path(self.path) as reachable:
            self.listener.bind(reachable)
        # The run's user is dynamic (D16) and unknown until it starts: the socket
        # takes any account's connection, but only its unit sees the path, and
        # handle() checks each peer.
        os.chmod(self.path, 0o666)
        self.listener.listen(8)

    def password(self) -> str:
        with self._lock:
            if self._password is None:
                # Only the node knows it (D22): set now, kept in this process only. A node
                # elsewhere has it set by the server's node, as its preparation did (D37).
                if self.config.elsewhere:
                    from ..node.server_link import ServerLink

                    self._password = ServerLink.of_node(self.config).grant(self.opened.hash)[1]
                else:
                    self._password = admin.set_random_password(self.config.repository, self.opened.record.user,
                                                               home=self.config.state_dir / "home")
            return self._password

    def caller(self) -> Caller:
        return Caller(self.opened.record.user, Path(self.config.repository), self.config.url, node=self.config,
                      password=self.password(), run_clone=self.clone)

    def answer(self, request: bytes) -> dict[str, Any]:
        try:
            call = json.loads(request)
            name, raw = call["tool"], call.get("input", {})
        except (ValueError, KeyError, TypeError):
            return _refusal("", "input", 'a call is one JSON line {"tool": NAME, "input": {...}}')
        tool = TOOLS.get(name) if isinstance(name, str) else None
        if tool is None:
            return _refusal(str(name), "tool", f"not one of {', '.join(TOOLS)}")
        with self.caller() as caller:
            return run_tool(tool, raw, caller).model_dump(mode="json")

    def serves(self, connection: socket.socket) -> bool:
        """Whether the peer is this record's run (its unit, or a check-in's), or root."""
        _pid, uid, unit = peer(connection)
        own = unit is not None and (unit == f"{self.stem}.service"
                                    or (unit.startswith(f"{self.stem}-") and unit.endswith(".service")))
        return uid == 0 or own

    def handle(self, connection: socket.socket) -> None:
        try:
            with connection:
                if not self.serves(connection):
                    return  # another account, or another run: not a byte read or sent
                connection.settimeout(READ_SECONDS)
                data = b""
                while not data.endswith(b"\n") and len(data) <= REQUEST_BYTES and (chunk := connection.recv(65536)):
                    data += chunk
                if not data:
                    return  # the node's probe: is the socket there (D24, socket_served.py)
                if len(data) > REQUEST_BYTES:
                    answer = _refusal("", "input", f"a call is at most {REQUEST_BYTES} bytes")
                elif self.record_dir.answered:  # C5: its user acts no more once the record is answered
                    answer = _refusal("", "caller", f"record {self.opened.hash[:12]} is answered")
                else:
                    answer = self.answer(data)
                connection.sendall(json.dumps(answer).encode() + b"\n")
        except OSError:
            pass  # a peer that sent nothing in time, or went away: its call is dropped, nothing else
        finally:
            self.calls.release()

    def close(self) -> None:
        self.listener.close()
        self.path.unlink(missing_ok=True)


class ToolSocketServer:
    """Every open socket-served run of one node."""

    def __init__(self, config: NodeConfig, server_code: str, clones: dict[str, Path] | None = None):
        # CLONES: a record's run clone elsewhere than its unit's home (tests without systemd)
        self.config, self.server_code, self.clones = config, server_code, clones or {}
        self.runs: dict[str, RunSocket] = {}
        self.selector = selectors.DefaultSelector()
        self.records = config.state_dir / "records"
        self.watched: dict[int, str] = {}  # a record directory's watch, by its number: the directory's name
        self.looked_at = 0  # records looked at so far: a burst's many marks must not look at all of them each

    def sync(self, changes: int | None = None, names: set[str] | None = None) -> None:
        """A socket for each open run that needs one; none for any other. NAMES: only these record
        directories changed (their marks, or their being made or removed); None: look at all."""
        if names is None:
            names = {d.hash for d in record_dirs(self.config)} | set(self.runs)
        for name in sorted(names):
            if name.startswith("."):
                continue  # a directory being removed (cleanup.py): its record was answered first
            directory = self.records / name
            if changes is not None and name not in self.watched.values() and directory.is_dir():
                try:  # record.json and the answered mark are written inside each record's directory
                    self.watched[add_watch(changes, str(directory), CHANGES)] = name
                except FileNotFoundError:
                    pass  # an answered record's directory, removed meanwhile (node_service/cleanup.py)
            self._consider(name, RecordDir(directory))

    def _consider(self, name: str, record_dir: RecordDir) -> None:
        self.looked_at += 1
        wanted = None
        if open_state(record_dir) is not None:
            try:
                opened, _ = record_dir.load()
                wanted = opened if served_by_socket(opened) else None
            except FileNotFoundError:
                pass  # answered and removed meanwhile
        if wanted is None and name in self.runs:
            run = self.runs.pop(name)
            self.selector.unregister(run.listener)
            run.close()
        elif wanted is not None and name not in self.runs:
            run = RunSocket(self.config, self.server_code, record_dir, wanted, self.clones.get(name))
            self.runs[name] = run
            self.selector.register(run.listener, selectors.EVENT_READ, run)

    def changed(self, changes: int) -> set[str] | None:
        """The record directories the waiting events touch, or None after the kernel lost some.
        A run's own marks (its unit's start, its preparation, its end) touch none: only the
        record's file and its own marks decide whether it has a socket."""
        names: set[str] = set()
        for wd, mask, name in events(changes):
            if mask & IN_Q_OVERFLOW:
                return None
            directory = self.watched.get(wd)
            if mask & IN_IGNORED:
                self.watched.pop(wd, None)
            if directory is None:  # the records directory itself: a record's directory made or removed
                if name:
                    names.add(name)
            elif mask & IN_IGNORED or name in OWN_FILES:
                names.add(directory)
        return names

    def serve(self, stop: threading.Event | None = None) -> None:
        self.records.mkdir(parents=True, exist_ok=True)
        # The records directory and each record's marks change when a run opens or is answered.
        changes = watch(str(self.records), CHANGES)
        self.selector.register(changes, selectors.EVENT_READ, None)
        self.sync(changes)
        # Type=notify: active means every open run's socket is bound (D24, ocx/node/socket_served.py).
        notify.ready()
        try:
            while stop is None or not stop.is_set():
                for key, _ in self.selector.select(timeout=1.0 if stop is not None else None):
                    if key.data is None:
                        self.sync(changes, self.changed(changes))
                    else:
                        connection, _ = key.data.listener.accept()
                        if not key.data.calls.acquire(blocking=False):
                            connection.close()  # CONNECTIONS calls of this run already wait: no thread more
                            continue
                        threading.Thread(target=key.data.handle, args=(connection,), daemon=True).start()
        finally:
            for run in self.runs.values():
                run.close()
            self.selector.close()
            os.close(changes)


def main(argv: list[str]) -> int:
    from ..fossil.repository import Repository

    config = node_config.load(argv[0])
    with Repository(config.repository) as repository:
        server_code = repository.server_code
    ToolSocketServer(config, server_code).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
