"""A run's stop step: what systemd says of its end, kept for the node (D4).

    python -I -m ocx.run_steps.stop_step NODE RECORD STEM

systemd runs it as root (ExecStopPost with `+`) when the program has ended,
still in the unit's cgroup and network namespace; isolated (`-I`: no working
directory, user site or PYTHON* variable on its path; its unit starts it with
`-S` too, run_units.python_module) and with no working directory of the
run's (D41). It keeps systemd's account of the end as the
run's ENDED mark (node/run_end.py, the one place an end is kept and told;
through the record's store) and pokes the node's socket, a unix socket,
since the run may have no network (D4, D34). It must return fast: a slow
stop step turns the unit's Result into `timeout`. So: standard library,
ocx.systemd's cgroup reader and sd-bus, no pydantic, no HTTP.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from ..node import run_end
from ..node.host_paths import STATE_ROOT
from ..node.record_store import RecordStore
from ..node.wake import poke
from ..systemd import stoppost
from ..systemd.system_state import end_facts


def record_end(node: str, record: str, stem: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    store = RecordStore(Path(STATE_ROOT) / node / "records" / record)
    report = stoppost.collect(env)
    system_stopping, job = end_facts(f"{stem}.service")
    ended = run_end.by_stop_step(stem, report, at=time.time(), system_stopping=system_stopping, job=job,
                                 invocation=(os.environ if env is None else env).get("INVOCATION_ID"))
    if store.path.is_dir():  # none: its record was answered and removed (cleanup.py)
        run_end.keep(store, stem, ended)
    return ended


def main(argv: list[str], door_cpu_ms: float | None = None) -> int:
    """DOOR_CPU_MS: given when the node's step service forked this process (step_server.py); unused."""
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
