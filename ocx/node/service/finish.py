"""Answering the runs that ended: from their stop step's facts to a response (C4, D4).

The stop step only records; the node writes, once it runs, and again after
any failure (the Fossil server down, say), since an ended run without its
`answered` mark is answered by the next pass.
"""
from __future__ import annotations

import json
import time

from ..unit import runner_homes
from .context import NodeContext
from .outcome import EndFacts, decide_outcome
from ..records import RecordDir, open_records
from .respond import Target, respond


def end_facts(ended: dict, record_dir: RecordDir, cpu_budget: int | None = None) -> EndFacts:
    stop = record_dir.marked("stop")
    unenforced = record_dir.marked("unenforced")
    stem = str(ended.get("unit", "")).removesuffix(".service")
    # The program's own time starts once its workspace is ready.
    started = record_dir.marked(f"prepared-{stem}") or record_dir.marked("started") or {}
    memory = ended.get("memory") or {}
    return EndFacts(
        result=ended.get("result") or "?",
        code=ended.get("code"),
        status=ended.get("status"),
        oom_killed=bool(memory.get("oom_kill")) or bool(memory.get("oom_killed")),
        seconds=max(0.0, ended.get("at", time.time()) - started.get("at", ended.get("at", 0.0))),
        stopped_by=stop.get("by") if stop else None,
        stop_hash=stop.get("stop") if stop else None,
        # D17: the stop step's own cgroup reading decides, not anything the run says.
        cpu_budget_hit=bool(cpu_budget) and (ended.get("cpu_usec") or 0) >= cpu_budget * 1_000_000,
        unenforced=unenforced.get("why") if unenforced else None,
        # D4: ended by a shutdown, as its stop step saw, or before this boot's manager started.
        system_stopping=bool(ended.get("system_stopping")) or ended_before_this_boot(ended),
        unprepared=unprepared(record_dir, stem),
    )


def unprepared(record_dir: RecordDir, stem: str) -> str | None:
    """Why the run's program never started, or None once its home was made."""
    if record_dir.marked(f"prepared-{stem}") is not None:
        return None
    failed = record_dir.marked(f"unprepared-{stem}")
    return failed.get("why", "unknown") if failed else "its preparation did not finish"


def ended_before_this_boot(ended: dict) -> bool:
    from ...systemd.system_state import started_at

    booted = started_at()
    return booted is not None and ended.get("at", booted) < booted


def ended_reports(record_dir: RecordDir) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(record_dir.path.glob("ended-*.json"))]


def _return_homes(context: NodeContext, record_dir, ended: dict) -> None:
    """What the run changed in its copies of its runner's homes, written back once it ended."""
    stem = str(ended.get("unit", "")).removesuffix(".service")
    try:
        count = runner_homes.copy_back(record_dir.path, stem)
    except OSError as error:  # the answer still goes out; the home keeps what it had
        context.log(f"runner homes not written back: {error}", record=record_dir.hash, priority=4)
        return
    if count:
        context.log(f"{count} files of the runner's homes written back from {stem}", record=record_dir.hash)


def answer_ended_runs(context: NodeContext) -> int:
    """Respond for every session whose unit's end was recorded; returns how many."""
    from ...systemd.system_state import stopping

    answered, shutdown = 0, None
    for record_dir in open_records(context.config):
        opened, _ = record_dir.load()
        if opened.record.is_command:
            continue
        for ended in ended_reports(record_dir):
            # Asked only when there is an end to answer: systemctl waits on a busy PID 1.
            shutdown = stopping() if shutdown is None else shutdown
            if shutdown:
                return 0  # D4: a node shutting down writes no response; the next start answers lost
            _return_homes(context, record_dir, ended)
            facts = end_facts(ended, record_dir, opened.record.budget.cpu)
            decided = decide_outcome(facts, opened.record.budget)
            if decided is None:
                continue  # a shutdown: the check at the next start answers lost (D4, D6)
            try:
                respond(context, Target.of(record_dir), *decided, record_dir)
                answered += 1
            except Exception as error:  # e.g. the Fossil server is down: the next pass tries again
                context.log(f"could not answer yet: {error}", record=opened.hash, priority=4)
            break
    return answered
