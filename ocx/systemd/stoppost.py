"""What a unit's privileged ExecStopPost records about its end (D4).

    python -m ocx.systemd.stoppost OUT.json

systemd runs it when the main process has ended, still inside the unit's
cgroup, so it can read what is gone once the unit stops: the memory
cgroup's OOM evidence (cgroup v1 reports a memory kill as a plain SIGKILL)
and the CPU time used. It writes one JSON object atomically and returns at
once: a stop-post slower than TimeoutStopSec is killed and turns the
unit's Result into `timeout` (notes), so the node does the slow work.
Only the standard library and ocx.systemd.cgroup: it starts in ~30 ms.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple  # not dataclasses: a fifth of its start

from ..files import write_atomically
from . import cgroup

if TYPE_CHECKING:  # imported where used: the stop step itself builds no unit
    from .units import ExecCommand

_CODES = {"exited", "killed", "dumped"}


class StopReport(NamedTuple):
    result: str                 # SERVICE_RESULT
    code: str | None            # EXIT_CODE: exited, killed, dumped
    status: str | None          # EXIT_STATUS: a number, or a signal name
    control_group: str | None
    cpu_usec: int | None
    memory: cgroup.MemoryEvidence | None

    @property
    def oom_killed(self) -> bool:
        return bool(self.memory and self.memory.oom_killed)

    def as_dict(self) -> dict[str, Any]:
        """As JSON keeps it: its memory evidence a dict too (what dataclasses' asdict gave)."""
        return {**self._asdict(), "memory": None if self.memory is None else self.memory._asdict()}


def command(out: str, python: str | None = None) -> ExecCommand:
    """The ExecStopPost entry: privileged (`+`), so it can write OUT outside
    the sandbox and read the cgroup as root."""
    from .units import ExecCommand

    py = python or sys.executable
    return ExecCommand(argv=[py, "-I", "-m", "ocx.systemd.stoppost", out], privileged=True)


def collect(given: Mapping[str, str] | None = None) -> StopReport:
    env = os.environ if given is None else given
    cg = cgroup.unit_control_group()
    mem_cg = cgroup.own_control_group(controller="memory") or cg
    return StopReport(
        result=env.get("SERVICE_RESULT", "?"),
        code=env.get("EXIT_CODE") if env.get("EXIT_CODE") in _CODES else None,
        status=env.get("EXIT_STATUS"),
        control_group=cg,
        cpu_usec=cgroup.cpu_usage_usec(cgroup.own_control_group() or cg) if cg else None,
        memory=cgroup.memory_evidence(mem_cg) if mem_cg else None)


def write(report: StopReport, out: str) -> None:
    write_atomically(out, json.dumps(report.as_dict()))


def read(out: str) -> StopReport:
    with open(out) as f:
        d = json.load(f)
    mem = d.pop("memory")
    return StopReport(memory=cgroup.MemoryEvidence(**mem) if mem else None, **d)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m ocx.systemd.stoppost OUT.json", file=sys.stderr)
        return 2
    write(collect(), argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
