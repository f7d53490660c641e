"""A run's stop step: what systemd says of its end, kept for the node (D4).

    python -I -m ocx.run_steps.stop_step NODE RECORD STEM

systemd runs it as root (ExecStopPost with `+`) when the program has ended,
still in the unit's cgroup and network namespace; isolated (`-I`: no working
directory, user site or PYTHON* variable on its path) and with no working
directory of the run's (D41). It writes the end's facts
into the record's directory and pokes the node's socket, a unix socket,
since the run may have no network (D4, D34). It must return fast: a slow
stop step turns the unit's Result into `timeout`. So: standard library,
ocx.systemd's cgroup reader, no pydantic, no HTTP.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..node import marks
from ..node.host_paths import STATE_ROOT
from ..node.states import Mark
from ..node.wake import poke
from ..systemd import stoppost
from ..systemd.system_state import job_on, stopping


def record_end(node: str, record: str, stem: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    record_dir = Path(STATE_ROOT) / node / "records" / record
    report = stoppost.collect(env)
    # JOB: a stop job on the unit while it stops, which the node asked for or root did (run_end.py).
    # INVOCATION: systemd's id of this start of the unit, which PID 1's lines about it carry (run_end.py).
    body = {"unit": f"{stem}.service", "at": time.time(), "system_stopping": stopping(),
            "job": job_on(f"{stem}.service"), "invocation": (os.environ if env is None else env).get("INVOCATION_ID"),
            **asdict(report)}
    # No directory: its record was answered and removed (cleanup.py). An end kept already (the node's,
    # from systemd's record, or a start given up on) is the end: a step done is not done again.
    if record_dir.is_dir() and marks.read(record_dir, Mark.ENDED, stem) is None:
        marks.write(record_dir, Mark.ENDED, body, stem)
    return body


def main(argv: list[str]) -> int:
    os.chdir("/")  # D41: nothing of the run's as a working directory, whatever systemd gave
    if len(argv) != 3:
        print("usage: python -m ocx.run_steps.stop_step NODE RECORD STEM", file=sys.stderr)
        return 2
    node, record, stem = argv
    try:
        record_end(node, record, stem)
    except Exception as error:  # the node answers from systemd's own record of the end (tend.py)
        print(f"ocx stop step: {error}", file=sys.stderr)
    poke(node, f"ended {stem}")  # on failure the boot-time check answers it later (D6)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
