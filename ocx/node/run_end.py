"""A run's end, told in one place: from systemd's account of a unit's end to the run's outcome and note (C4, D4, D17).

systemd's account is kept as the run's ENDED mark (record_store.py), in
one shape, by one of three hands, each through `keep` here: the unit's
stop step (`by_stop_step`: SERVICE_RESULT, EXIT_CODE, EXIT_STATUS and the
cgroup's evidence, as systemd/stoppost.py reads them), the node when the
stop step kept none but systemd still holds the unit (`end_from_systemd`:
its Result, exit code and status are the same facts), and the node when it
gave up starting a check-in's run (`never_started`). An end kept is the
end: a step done is never done again.

The telling is the node's, once it runs, and again after any failure,
since an ended run whose record is not answered is looked at by every
pass (node_service/tend.py, checkin_runs.py): `end_facts` reads the ENDED
mark with the record's other marks (a stop, a lost restriction, the run's
preparation), and `decide_outcome` turns those facts into the response's
outcome and note, or says none is due now (D4).

Standard library at import (and ocx.systemd's light modules): the stop step
imports it and must return fast (D4); the protocol's message types, which
need pydantic, are loaded only when the node decides.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple  # not dataclasses: the stop step imports this (docs/node.md)

from ..protocol.numerals import is_digits
from ..systemd.stoppost import StopReport
from ..systemd.system_state import started_at
from .record_store import RecordStore
from .states import Mark

if TYPE_CHECKING:
    from ..protocol.messages import Budget, Outcome
    from ..systemd.manager import Systemd

_EXIT_CODES = {1: "exited", 2: "killed", 3: "dumped"}  # systemd's ExecMainCode (CLD_EXITED, CLD_KILLED, CLD_DUMPED)


# -- systemd's account, kept as the ENDED mark -------------------------------

def by_stop_step(stem: str, report: StopReport, at: float, system_stopping: bool, *, job: str | None = None,
                 invocation: str | None = None) -> dict[str, Any]:
    """What the unit's stop step saw of its end (systemd/stoppost.py), and whether the host is going down.
    JOB: a job on the unit while it stops, which the node asked for or root did (`end_facts`).
    INVOCATION: systemd's id of this start of the unit, which PID 1's lines about it carry."""
    return {"unit": f"{stem}.service", "at": at, "system_stopping": system_stopping, "job": job,
            "invocation": invocation, **report.as_dict()}


def never_started(stem: str) -> dict[str, Any]:
    """A check-in run whose start the node gave up on: it ended before it began (judged `fail: not run`)."""
    return {"unit": f"{stem}.service", "at": time.time(), "result": "exit-code"}


def keep(store: RecordStore, stem: str, ended: dict[str, Any]) -> dict[str, Any]:
    """ENDED kept as the run's end, unless an end is kept already (the stop step's, the node's from
    systemd's record, a start given up on): that one is the end. Returns the end kept."""
    kept = store.marked(Mark.ENDED, stem)  # the file itself, not the pass's look
    if kept is not None:
        return kept
    store.mark(Mark.ENDED, ended, stem)
    return ended


async def end_from_systemd(systemd: Systemd, store: RecordStore, stem: str) -> dict[str, Any] | None:
    """The end of a unit whose stop step kept nothing, as systemd still holds it; kept as its `ended` mark.
    An end already kept (its stop step's, written since the pass looked) is the end."""
    kept = store.marked(Mark.ENDED, stem)
    if kept is not None:
        return kept
    properties = await systemd.service_properties(stem + ".service")
    if not properties:
        return None
    return keep(store, stem, _from_properties(stem, properties))


def _from_properties(stem: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    status = properties.get("ExecMainStatus")
    return {"unit": stem + ".service", "at": time.time(), "system_stopping": False, "from": "systemd",
            "result": properties.get("Result"), "code": _EXIT_CODES.get(properties.get("ExecMainCode") or 0),
            "status": None if status is None else str(status)}


# -- the telling: the facts of an end, then its outcome and note ------------

# A job on the unit while it stopped that ends it: queued by a client of PID 1's, never by the run (D4).
ENDING_JOBS = frozenset({"stop", "restart", "try-restart"})

class EndFacts(NamedTuple):
    result: str  # systemd's Result: success, exit-code, signal, timeout, oom-kill, core-dump…
    code: str | None  # exited, killed, dumped
    status: str | None  # the exit status, or the signal's name or number
    oom_killed: bool = False  # cgroup v1's evidence of a memory kill
    seconds: float = 0.0  # from the program's start to its end
    stopped_by: str | None = None  # the sender of the stop the node acted on
    stop_hash: str | None = None
    ended_on_node: bool = False  # root stopped its unit on the node, not the node for a stop message
    signalled_on_node: str | None = None  # the signal that ended it, sent by PID 1 as root asked (KillUnit)
    cpu_budget_hit: bool = False  # the node stopped it at its cpu budget (D17)
    unenforced: str | None = None  # what the node could no longer hold (D24)
    system_stopping: bool = False  # ended by a shutdown: the next start answers lost (D4)
    unprepared: str | None = None  # its workspace was never made, so its program never ran
    unprepared_fault: bool = False  # ... for a fault of the node's own (its server restarting, say)

    @property
    def cut_off(self) -> bool:
        """Ended by a host shutdown, not by itself, a limit or a stop (D4, D18): no response is due now."""
        return self.system_stopping and self.stopped_by is None


def end_facts(ended: Mapping[str, Any], store: RecordStore, cpu_budget: int | None = None) -> EndFacts:
    """The facts of the run's end (its ENDED mark's body), with the record's marks that tell how it came."""
    stop = store.marked(Mark.STOP)
    unenforced = store.marked(Mark.UNENFORCED)
    stem = str(ended.get("unit", "")).removesuffix(".service")
    # The program's own time starts once its workspace is ready.
    started = store.marked(Mark.PREPARED, stem) or store.marked(Mark.STARTED, stem) or {}
    memory = ended.get("memory") or {}
    failed = store.marked(Mark.UNPREPARED, stem)
    return EndFacts(
        result=ended.get("result") or "?",
        code=ended.get("code"),
        status=ended.get("status"),
        oom_killed=bool(memory.get("oom_kill")) or bool(memory.get("oom_killed")),
        seconds=max(0.0, ended.get("at", time.time()) - started.get("at", ended.get("at", 0.0))),
        stopped_by=stop.get("by") if stop else None,
        stop_hash=stop.get("stop") if stop else None,
        # Root's stop on the node (machinectl terminate, systemctl stop): a stop job the node did not queue,
        # for it queues one only after its own mark of why (a stop message's, a lost restriction's).
        ended_on_node=ended.get("job") in ENDING_JOBS and not stop and not unenforced,
        signalled_on_node=None if stop or unenforced else signalled_on_node(ended),
        # D17: the stop step's own cgroup reading decides, not anything the run says.
        cpu_budget_hit=bool(cpu_budget) and (ended.get("cpu_usec") or 0) >= (cpu_budget or 0) * 1_000_000,
        unenforced=unenforced.get("why") if unenforced else None,
        # D4: ended by a shutdown, as its stop step saw, or before this boot's manager started.
        system_stopping=bool(ended.get("system_stopping")) or ended_before_this_boot(ended),
        unprepared=unprepared(store, stem),
        unprepared_fault=bool(failed and failed.get("fault")),
    )


def signalled_on_node(ended: Mapping[str, Any]) -> str | None:
    """The signal that ended the run when PID 1 sent it because root asked (`machinectl kill`, `systemctl
    kill`), as PID 1's own line in the journal says, or None: a run's own kill of its processes leaves
    the same end, and no such line (docs/security.md, 'Runs as machines')."""
    from ..systemd.journal_tail import requested_signal

    invocation = ended.get("invocation")
    if ended.get("code") not in ("killed", "dumped") or not isinstance(invocation, str):
        return None
    sent = requested_signal(str(ended.get("unit", "")), invocation)
    return sent if sent is not None and sent == signal_name(ended.get("status")) else None


def unprepared(store: RecordStore, stem: str) -> str | None:
    """Why the run's program never started, or None once its home was made."""
    if store.marked(Mark.PREPARED, stem) is not None:
        return None
    failed = store.marked(Mark.UNPREPARED, stem)
    return str(failed.get("why", "unknown")) if failed else "its preparation did not finish"


def letters_found(store: RecordStore, stem: str) -> dict[str, str] | None:
    """What the run's preparation found of its user's letters that ends the record (node/letters.py):
    {"refused_user": note} (D40) or {"unenforced": why} (D24); None otherwise."""
    if Mark.UNPREPARED not in store.run_marks(stem):
        return None
    told = store.marked(Mark.UNPREPARED, stem) or {}
    return {key: told[key] for key in ("refused_user", "unenforced") if key in told} or None


def ended_before_this_boot(ended: Mapping[str, Any]) -> bool:
    return before_this_boot(ended.get("at"))


def before_this_boot(at: float | None) -> bool:
    booted = started_at()
    return booted is not None and at is not None and at < booted


def signal_name(status: str | None) -> str:
    if status is None:
        return "a signal"
    if is_digits(status):
        import signal

        try:
            return signal.Signals(int(status)).name
        except ValueError:
            return f"signal {status}"
    return status if status.startswith("SIG") else f"SIG{status}"


def _duration(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole} second" + ("" if whole == 1 else "s")


def decide_outcome(facts: EndFacts, budget: Budget) -> tuple[Outcome, str] | None:
    """The outcome, first that applies (C4), or None when no response is due now."""
    from ..protocol.budget import format_seconds  # the node's, not the stop step's (its start, docs/node.md)
    from ..protocol.messages import Outcome  # pydantic: never loaded by the stop step (module docstring)

    if facts.cut_off:
        return None  # D4: a node shutting down writes no response
    after = f"after {_duration(facts.seconds)}"
    if facts.stopped_by is not None:
        by = f" (stop {facts.stop_hash})" if facts.stop_hash else ""
        return Outcome.stopped, f"stopped by {facts.stopped_by}{by} {after}"
    if facts.ended_on_node:
        return Outcome.stopped, ("ended on the node by root (machinectl terminate, systemctl stop), "
                                 f"not by a stop message, {after}")
    if facts.signalled_on_node is not None and not facts.cpu_budget_hit:  # the cpu watch's KillUnit is the node's
        return Outcome.stopped, (f"ended on the node by root ({facts.signalled_on_node} sent by machinectl kill or "
                                 f"systemctl kill), not by a stop message, {after}")
    if facts.unprepared is not None:
        # C4: `refused` is for what the node cannot hold; its own fault that outlasted the tries is `lost`.
        outcome = Outcome.lost if facts.unprepared_fault else Outcome.refused
        return outcome, f"the node could not prepare its workspace: {facts.unprepared}"
    if facts.result == "timeout":
        return Outcome.budget, f"wall {budget.wall} reached"
    oom = facts.result == "oom-kill" or (facts.oom_killed and facts.code in ("killed", "dumped"))
    if oom and budget.memory is not None:
        return Outcome.budget, f"memory {budget.memory} reached"
    if oom:  # no limit of the record's was reached: the host ran out (C4; docs/security.md, 'Class 8')
        return Outcome.exited, f"killed by {signal_name(facts.status or 'KILL')} (out of memory on the host) {after}"
    if facts.cpu_budget_hit:
        return Outcome.budget, f"cpu {format_seconds(budget.cpu or 0)} reached"
    if facts.unenforced is not None:
        return Outcome.unenforced, f"{facts.unenforced}; the run was ended"
    if facts.code in ("killed", "dumped"):
        return Outcome.exited, f"killed by {signal_name(facts.status)} {after}"
    if facts.code == "exited" and facts.status is not None:
        if facts.status == "203":
            return Outcome.exited, f"exit 203: the program could not be started {after}"
        return Outcome.exited, f"exit {facts.status} {after}"
    return Outcome.exited, f"ended with systemd result {facts.result} {after}"
