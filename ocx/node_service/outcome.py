"""From how a run's unit ended to the response's outcome and note (C4, D4, D17).

Pure: the facts come from the unit's stop step (systemd's SERVICE_RESULT,
EXIT_CODE, EXIT_STATUS and the cgroup's evidence) and from the marks the node
left before it acted (a stop, a CPU budget, a lost enforcement).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..protocol.budget import format_seconds
from ..protocol.messages import Budget, Outcome
from ..protocol.numerals import is_digits


@dataclass(frozen=True)
class EndFacts:
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
    if facts.system_stopping and facts.stopped_by is None:
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
