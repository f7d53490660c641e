"""A record's way on the two hosts of tests/elsewhere (hosts.py), as the tests read it: posted
through the server's web form for the build host, its unit running there, its answers in the served
repository with their senders."""
from __future__ import annotations

import json

from .hosts import on, wait_until


def answers(hosts, record: str, timeout: float = 120.0) -> list:
    """Every response to RECORD in the served repository, once there is one: [outcome, note, node, sender]."""
    try:
        return wait_until(lambda: on(hosts.server, "answers", record)["responses"], timeout,
                          f"an answer to {record[:12]}")
    except AssertionError as error:
        said = on(hosts.build, "journal", "ocx-node@build1.service")["journal"][-3000:]
        raise AssertionError(f"{error}\n--- the build host's node ---\n{said}") from None


def answer(hosts, record: str, node: str = "build", timeout: float = 120.0) -> tuple[str, str]:
    """RECORD's one answer, written as NODE's node user: (outcome, note)."""
    found = answers(hosts, record, timeout)
    assert len(found) == 1, found  # C4: once
    outcome, note, named, sender = found[0]
    code = hosts.codes["build_code" if node == "build" else "server_code"]
    assert named == code and sender == ("ocx-node-build1" if node == "build" else "ocx-node"), found
    return outcome, note


def record_for(hosts, by: str | None = None, **fields) -> dict:
    fields.setdefault("node", hosts.codes["build_code"])
    return on(hosts.server, "post", json.dumps(fields), *([by] if by else []))


def running(hosts, record: str, timeout: float = 120.0) -> None:
    unit = unit_of(hosts.codes["build_code"], record)
    wait_until(lambda: on(hosts.build, "active", unit).get("SubState") == "running", timeout, f"{unit} running")


def journal_of(host, lines: int = 120, *matches: str) -> str:
    """HOST's last journal lines (those MATCHES names, e.g. OCX_RECORD=HASH), for a failure's message."""
    done = host.exec(["journalctl", "-n", str(lines), "--no-pager", "-o", "short-precise", *matches])
    return done.output.decode(errors="replace") if isinstance(done.output, bytes) else str(done.output)


def unit_of(code: str, record: str) -> str:
    return f"ocx-{code[:12]}-{record[:12]}.service"
