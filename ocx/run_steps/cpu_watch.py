"""D17's `cpu` budget, held from outside the run (docs/security.md, 'Budgets held from outside the run').

    python -I -m ocx.run_steps.cpu_watch NODE RECORD STEM SECONDS RATE ROUND

Anything that runs as the run's user the run can stop (`kill -STOP`), as it
could the feeder that once held this budget. So with each run that has a
`cpu` budget the node starts a transient timer, `STEM-cpu-1.timer`, outside
ocx.slice, that fires at the earliest moment the budget could be spent: the
budget over the node's per-run CPU rate (CPUQuota holds the run to RATE
CPUs). Its service, this program, runs as root outside the run, reads the
CPU time of the run unit's cgroup (which the run cannot touch) and either
kills the unit, every process of it, as a spent budget ends a run, or
starts round N+1 for the earliest moment the rest could be spent. No OCX
process waits meanwhile (D17): only systemd's timer. A run that ends, by
any way, stops its pending timer (StopPropagatedFrom). The stop step's own
reading of the cgroup decides the answer `budget` (run_end.py); the
`cpu-STEM` mark written here only says when and why the unit was killed.
"""
from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import write_atomically  # one way to write a file whole (docs/architecture.md)
from ..node.host_paths import STATE_ROOT
from ..systemd.timers import TransientTimer
from ..systemd.units import TransientService

if TYPE_CHECKING:                      # the manager is imported when a round is armed
    from ..systemd.manager import Systemd

RUNNING = ("active", "activating", "reloading")
SOONEST = 0.2  # seconds: a floor under the next wait, and the timer's accuracy
USEC = 1_000_000


def earliest(remaining_usec: int, rate: float) -> float:
    """Seconds until REMAINING could be spent, the run using RATE CPUs flat out."""
    return max(SOONEST, remaining_usec / USEC / max(rate, 0.01))


def watch_units(python: str, node: str, record: str, stem: str, seconds: float, rate: float,
                round_: int, after: float) -> tuple[TransientTimer, TransientService]:
    """Round ROUND's timer, AFTER seconds from now, and the service it starts (this program)."""
    name = f"{stem}-cpu-{round_}"
    timer = TransientTimer(name=f"{name}.timer", on_active_sec=max(after, SOONEST), accuracy_sec=SOONEST,
                           description=f"OCX record {record}: cpu budget of {stem}, check {round_}",
                           stop_propagated_from=[f"{stem}.service"])
    service = TransientService(
        name=f"{name}.service",
        argv=[python, "-I", "-m", "ocx.run_steps.cpu_watch", node, record, stem, repr(float(seconds)),
              repr(float(rate)), str(round_)],
        description=timer.description,
        slice=None,  # the node's side, not ocx.slice: runs that fill their slice cannot starve it
        type="oneshot",
        working_directory="/",
        timeout_start_sec=60,
        accounting=False,
        add_ref=False,
    )
    return timer, service


async def arm(systemd: Systemd, python: str, node: str, record: str, stem: str, seconds: float, rate: float,
              round_: int = 1, after: float | None = None) -> str:
    """Start round ROUND (the first: at the budget over the rate); returns the timer's name.
    The first round replaces one an attempt cut off before its run started left (D5)."""
    wait = earliest(int(seconds * USEC), rate) if after is None else after
    timer, service = watch_units(python, node, record, stem, seconds, rate, round_, wait)
    await systemd.start_timer(timer, service, replace=round_ == 1)
    return timer.name


def _mark(node: str, record: str, stem: str, body: dict[str, float]) -> None:
    """A note beside the record's marks, not one of its states (states.py): no change of the table."""
    write_atomically(Path(STATE_ROOT) / node / "records" / record / f"cpu-{stem}.json", json.dumps(body))


async def check(node: str, record: str, stem: str, seconds: float, rate: float, round_: int) -> str:
    """One round: `gone`, `spent` (the unit was killed) or `rearmed`."""
    from ..systemd.manager import Systemd

    unit = f"{stem}.service"
    systemd = await Systemd.connect()
    try:
        state = await systemd.state(unit)
        if state is None or state.active_state not in RUNNING:
            return "gone"
        used = await systemd.cpu_usec(unit) or 0
        limit = int(seconds * USEC)
        if used >= limit:
            await systemd.kill(unit, signal.SIGKILL)  # every process: a spent budget ends the run (D17)
            print(f"{stem}: cpu_usec {used} of {limit}: killed", flush=True)  # kept in the journal past the answer
            try:
                _mark(node, record, stem, {"at": time.time(), "cpu_usec": used, "round": round_})
            except OSError:
                pass  # only a note: the stop step's own reading decides
            return "spent"
        await arm(systemd, sys.executable, node, record, stem, seconds, rate, round_ + 1,
                  earliest(limit - used, rate))
        return "rearmed"
    finally:
        systemd.close()


def main(argv: list[str]) -> int:
    if len(argv) != 6:
        print("usage: python -I -m ocx.run_steps.cpu_watch NODE RECORD STEM SECONDS RATE ROUND", file=sys.stderr)
        return 2
    node, record, stem, seconds, rate, round_ = argv
    outcome = asyncio.run(check(node, record, stem, float(seconds), float(rate), int(round_)))
    print(f"{stem}: {outcome} (round {round_})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
