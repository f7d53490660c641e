"""From a run's end to its outcome: the stop step's facts, or systemd's own (C4, D4).

The stop step only records (`ended-STEM`); the node decides, once it runs,
and again after any failure, since an ended run whose record is not
answered is looked at by every pass (tend.py). When the stop step left no
record but systemd still holds the unit (it failed, say), the end is read
from systemd instead: its Result, exit code and status are the same facts.
"""
from __future__ import annotations

import time

from ..node import marks, runner_homes
from ..node.record_dirs import RecordDir
from ..node.states import Mark
from .context import NodeContext
from .outcome import EndFacts

# A job on the unit while it stopped that ends it: queued by a client of PID 1's, never by the run (D4).
ENDING_JOBS = frozenset({"stop", "restart", "try-restart"})


def end_facts(ended: dict, record_dir: RecordDir, cpu_budget: int | None = None) -> EndFacts:
    stop = record_dir.marked(Mark.STOP)
    unenforced = record_dir.marked(Mark.UNENFORCED)
    stem = str(ended.get("unit", "")).removesuffix(".service")
    # The program's own time starts once its workspace is ready.
    started = record_dir.marked(Mark.PREPARED, stem) or record_dir.marked(Mark.STARTED, stem) or {}
    memory = ended.get("memory") or {}
    failed = record_dir.marked(Mark.UNPREPARED, stem)
    return EndFacts(
        result=ended.get("result") or "?",
        code=ended.get("code"),
        status=ended.get("status"),
        oom_killed=bool(memory.get("oom_kill")) or bool(memory.get("oom_killed")),
        seconds=max(0.0, ended.get("at", time.time()) - started.get("at", ended.get("at", 0.0))),
        stopped_by=stop.get("by") if stop else None,
        # Root's stop on the node (machinectl terminate, systemctl stop): a stop job the node did not queue,
        # for it queues one only after its own mark of why (a stop message's, a lost restriction's).
        ended_on_node=ended.get("job") in ENDING_JOBS and not stop and not unenforced,
        signalled_on_node=None if stop or unenforced else signalled_on_node(ended),
        stop_hash=stop.get("stop") if stop else None,
        # D17: the stop step's own cgroup reading decides, not anything the run says.
        cpu_budget_hit=bool(cpu_budget) and (ended.get("cpu_usec") or 0) >= cpu_budget * 1_000_000,
        unenforced=unenforced.get("why") if unenforced else None,
        # D4: ended by a shutdown, as its stop step saw, or before this boot's manager started.
        system_stopping=bool(ended.get("system_stopping")) or ended_before_this_boot(ended),
        unprepared=unprepared(record_dir, stem),
        unprepared_fault=bool(failed and failed.get("fault")),
    )


def signalled_on_node(ended: dict) -> str | None:
    """The signal that ended the run when PID 1 sent it because root asked (`machinectl kill`, `systemctl
    kill`), as PID 1's own line in the journal says, or None: a run's own kill of its processes leaves
    the same end, and no such line (docs/security.md, 'Runs as machines')."""
    from ..systemd.journal_tail import requested_signal
    from .outcome import signal_name

    if ended.get("code") not in ("killed", "dumped") or not isinstance(ended.get("invocation"), str):
        return None
    sent = requested_signal(str(ended.get("unit", "")), ended["invocation"])
    return sent if sent is not None and sent == signal_name(ended.get("status")) else None


def unprepared(record_dir: RecordDir, stem: str) -> str | None:
    """Why the run's program never started, or None once its home was made."""
    if record_dir.marked(Mark.PREPARED, stem) is not None:
        return None
    failed = record_dir.marked(Mark.UNPREPARED, stem)
    return failed.get("why", "unknown") if failed else "its preparation did not finish"


def letters_found(record_dir: RecordDir, stem: str) -> dict | None:
    """What the run's preparation found of its user's letters that ends the record (node/letters.py):
    {"refused_user": note} (D40) or {"unenforced": why} (D24); None otherwise."""
    if Mark.UNPREPARED not in marks.present(record_dir.path)[1].get(stem, frozenset()):
        return None
    told = record_dir.marked(Mark.UNPREPARED, stem) or {}
    return {key: told[key] for key in ("refused_user", "unenforced") if key in told} or None


def ended_before_this_boot(ended: dict) -> bool:
    return before_this_boot(ended.get("at"))


def before_this_boot(at: float | None) -> bool:
    from ..systemd.system_state import started_at

    booted = started_at()
    return booted is not None and at is not None and at < booted


async def end_from_systemd(systemd, record_dir: RecordDir, stem: str) -> dict | None:
    """The end of a unit whose stop step kept nothing, as systemd still holds it; kept as its `ended` mark.
    An end already kept (its stop step's, written since the pass looked) is the end: a step done is
    never done again."""
    kept = record_dir.marked(Mark.ENDED, stem)  # the file itself, not the pass's look
    if kept is not None:
        return kept
    properties = await systemd.service_properties(stem + ".service")
    if not properties:
        return None
    code = {1: "exited", 2: "killed", 3: "dumped"}.get(properties.get("ExecMainCode") or 0)
    status = properties.get("ExecMainStatus")
    ended = {"unit": stem + ".service", "at": time.time(), "system_stopping": False, "from": "systemd",
             "result": properties.get("Result"), "code": code, "status": None if status is None else str(status)}
    record_dir.mark(Mark.ENDED, ended, stem)
    return ended


def return_homes(context: NodeContext, record_dir: RecordDir, ended: dict) -> None:
    """What the run changed in its copies of its runner's homes, written back once it ended."""
    stem = str(ended.get("unit", "")).removesuffix(".service")
    try:
        count = runner_homes.copy_back(record_dir.path, stem)
    except OSError as error:  # the answer still goes out; the home keeps what it had
        context.log(f"runner homes not written back: {error}", record=record_dir.hash, priority=4)
        return
    if count:
        context.log(f"{count} files of the runner's homes written back from {stem}", record=record_dir.hash)


