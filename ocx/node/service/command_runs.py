"""`command` records: each check-in on their branches, run once, then judged (C2, D3, D17, D18, V1).

A command record stays open until stopped. Each check-in that reaches it
(decide's RunCheckin) joins its queue, a file per check-in numbered in
arrival order, so the order survives restarts. One runs at a time (D18): its
own unit `ocx-N-R-C.service`, a fresh clone and a checkout of exactly that
check-in, the record's sandbox and, for each run, its budget. When the unit
has ended (its stop step wrote `ended-STEM.json`), the node starts the next
check-in first, then adds the `ci` verdict on the one that ended, as the node
user, against the record's full hash.

Every step is keyed by files, so a pass repeated after a crash does
nothing twice: `started-STEM` (its unit was started), `ended-STEM` (the stop
step), `verdict-STEM` (the tag is in the repository).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from ...protocol.decide import OpenRecord
from ...protocol.messages import Outcome
from ...protocol.verdict import Judgement, VerdictTag, format_verdict
from ...systemd.units import TransientService
from .context import NodeContext
from .finish import end_facts, ended_before_this_boot
from ..layout import SLICE, RunHome, unit_name, unit_stem
from .outcome import decide_outcome
from ..unit import bounded
from ..unit.prepare import prepare_run
from .runs import egress_filter, watch_cpu
from ..records import RecordDir, open_records, write_atomically
from .sandbox import run_hardening
from .sessions import (STOP_TIMEOUT_SECONDS, environment, hidden_paths, prepare_step, prepared_in_unit, preparation,
                       python_module,
                       stop_step)

LAST_LINE = ".ocx-last-line"  # in the run's home: its program's last line of output
RUNNING = ("active", "activating", "reloading", "deactivating")


def queue_dir(record_dir: RecordDir) -> Path:
    return record_dir.path / "checkins"


def enqueue(record_dir: RecordDir, checkin: str, branch: str) -> bool:
    """Add CHECKIN to the end of the record's queue once; False if it was there already.

    The node handles receipts in order, and a receipt's artifacts in the order
    Fossil stored them (rid), so the queue's numbering is the arrival order
    (D18), also among the check-ins of one push."""
    queue = queue_dir(record_dir)
    queue.mkdir(exist_ok=True)
    names = [p.name for p in queue.glob("*.json")]
    if any(name.endswith(f"-{checkin}.json") for name in names):
        return False
    sequence = 1 + max((int(name.split("-", 1)[0]) for name in names), default=0)
    write_atomically(queue / f"{sequence:08d}-{checkin}.json", json.dumps({"checkin": checkin, "branch": branch}) + "\n")
    return True


def queued(record_dir: RecordDir) -> list[str]:
    """The record's check-ins in arrival order."""
    queue = queue_dir(record_dir)
    if not queue.is_dir():
        return []
    return [json.loads(p.read_text())["checkin"] for p in sorted(queue.glob("*.json"))]


def command_service(context: NodeContext, opened: OpenRecord, record_dir: RecordDir, checkin: str,
                    egress_filter: str | None = None) -> TransientService:
    """The unit of one check-in's run: the session's sandbox, no deliveries (D16, D17)."""
    config, record = context.config, opened.record
    name = unit_name(context.server_code, opened.hash, checkin)
    home = RunHome(name.removesuffix(".service"))
    budget, sandbox = record.budget, record.sandbox
    last_line = str(home.inside / LAST_LINE)
    checkout = home.inside / "checkout"  # the program runs at the check-in's root; the feeder enters it
    argv = python_module(config, "ocx.node.inside.feeder", "-", "--last-line", last_line, "--cwd", str(checkout),
                         "--", *(record.command or []))
    step = preparation(config, record_dir, opened, home.stem, checkin)
    return TransientService(
        name=name,
        description=f"OCX record {opened.hash} command on {checkin} as {record.user}",  # D3
        slice=SLICE,
        argv=argv,
        environment=environment(str(home.inside), record.user, {}),
        # No WorkingDirectory: systemd runs the `+` steps in it too, as root (D41).
        dynamic_user=True,
        state_directory=[home.state_directory],
        memory_max=budget.memory_bytes,
        tasks_max=budget.processes,
        runtime_max_sec=budget.wall_seconds,
        cpu_quota=config.cpu_quota,
        protect_system="strict",
        protect_home="tmpfs",
        private_tmp=True,
        private_network=not sandbox.network,  # D34
        read_only_paths=list(sandbox.read_only),
        read_write_paths=list(sandbox.read_write),
        inaccessible_paths=hidden_paths(config),
        hardening=run_hardening(sandbox.network, egress_filter),
        exec_start_pre=[prepare_step(config, step)] if prepared_in_unit(opened) else [],
        timeout_start_sec=600,
        exec_stop_post=[stop_step(config, record_dir, home.stem)],
        standard_input="null",
        standard_output="journal",
        standard_error="journal",
        add_ref=False,
        timeout_stop_sec=STOP_TIMEOUT_SECONDS,
    )


def verdict_for(context: NodeContext, record_dir: RecordDir, opened: OpenRecord, ended: dict,
                home: RunHome) -> tuple[Judgement, str] | None:
    """`pass` on exit 0, else `fail`; the reason its last line, or the limit it hit (D17)."""
    facts = end_facts(ended, record_dir, opened.record.budget.cpu)
    decided = decide_outcome(facts, opened.record.budget)
    if decided is None or decided[0] is Outcome.stopped:
        return None  # a shutdown or a stop: the check-in was not judged
    outcome, note = decided
    # The run's own file, shaped as it likes (a link to a secret, a FIFO, a
    # huge or many-line file): read only as D41 allows, one clean line (hole 2).
    last = bounded.read_last_line(home.on_host / LAST_LINE)
    if outcome is Outcome.budget:
        return Judgement.failed, f"budget: {note}"
    if outcome is Outcome.refused:
        return Judgement.failed, f"not run: {note}"
    passed = facts.code == "exited" and facts.status == "0"
    return (Judgement.passed if passed else Judgement.failed), last or note


async def tend(context: NodeContext, systemd) -> int:
    """Judge every ended check-in run and start each record's next; returns verdicts written."""
    written = 0
    for record_dir in open_records(context.config):
        opened, _ = record_dir.load()
        if not opened.record.is_command or record_dir.marked("stop"):
            continue
        written += await _tend_record(context, systemd, record_dir, opened)
    return written


async def _tend_record(context: NodeContext, systemd, record_dir: RecordDir, opened: OpenRecord) -> int:
    unjudged = []
    for checkin in queued(record_dir):
        stem = unit_stem(context.server_code, opened.hash, checkin)
        if record_dir.marked(f"verdict-{stem}") is not None:
            continue
        if record_dir.marked(f"started-{stem}") is None:
            await start_checkin(context, systemd, record_dir, opened, checkin)
            break
        ended = record_dir.marked(f"ended-{stem}")
        if ended is None:
            if await _gone(systemd, stem + ".service") and record_dir.marked(f"ended-{stem}") is None:
                # Its unit vanished without an end (the host went down): it never finished, so it runs again.
                (record_dir.path / f"started-{stem}.json").unlink()
                await start_checkin(context, systemd, record_dir, opened, checkin)
            break  # D18: it still runs
        if cut_off(ended, record_dir):
            # D18: a host shutdown ended it, unjudged: it runs again once the host is back, before any later one.
            if ended_before_this_boot(ended):
                for mark in ("started", "ended", "prepared", "unprepared"):
                    (record_dir.path / f"{mark}-{stem}.json").unlink(missing_ok=True)
                await start_checkin(context, systemd, record_dir, opened, checkin)
            break  # else the host is going down now: the first pass after it is back runs it
        unjudged.append((checkin, stem))  # ended: judge it once the next one is on its way
    written = 0
    for checkin, stem in unjudged:
        written += judge(context, record_dir, opened, checkin, stem)
    return written


def cut_off(ended: dict, record_dir: RecordDir) -> bool:
    """Whether a check-in's run was ended by a host shutdown, not by itself, a limit or a stop (D4, D18)."""
    facts = end_facts(ended, record_dir)
    return facts.system_stopping and facts.stopped_by is None


async def _gone(systemd, name: str) -> bool:
    state = await systemd.state(name)
    return state is None or state.active_state not in RUNNING


async def start_checkin(context: NodeContext, systemd, record_dir: RecordDir, opened: OpenRecord, checkin: str) -> str:
    stem = unit_stem(context.server_code, opened.hash, checkin)
    name = f"{stem}.service"
    try:
        service = command_service(context, opened, record_dir, checkin, egress_filter(context, opened))
        if not prepared_in_unit(opened):  # D34: the node prepares it, before the start
            prepare_run(preparation(context.config, record_dir, opened, stem, checkin))
    except Exception as failure:  # judged `fail: not run`, and the queue goes on
        record_dir.mark(f"unprepared-{stem}", {"why": f"{type(failure).__name__}: {failure}"})
        record_dir.mark(f"started-{stem}", {"unit": name, "at": time.time()})
        record_dir.mark(f"ended-{stem}", {"unit": name, "at": time.time(), "result": "exit-code"})
        return name
    record_dir.mark(f"started-{stem}", {"unit": service.name, "at": time.time()})
    await watch_cpu(context, systemd, opened, stem)
    await systemd.start(service)
    context.log(f"started {service.name} for check-in {checkin}", record=opened.hash)
    return service.name


def judge(context: NodeContext, record_dir: RecordDir, opened: OpenRecord, checkin: str, stem: str) -> int:
    """The `ci` verdict of one ended run, as the node user (V1, D20); 1 when written."""
    home = RunHome(stem)
    ended = record_dir.marked(f"ended-{stem}") or {}
    verdict = verdict_for(context, record_dir, opened, ended, home)
    if verdict is not None:
        judgement, reason = verdict
        value = format_verdict(judgement, reason[:500], opened.hash)
        try:
            tag = context.node_clone().tag(checkin, VerdictTag.ci.value, value)
        except Exception as error:  # e.g. the server is down: the next pass tries again
            context.log(f"could not write the verdict on {checkin[:12]} yet: {error}", record=opened.hash, priority=4)
            return 0
        context.log(f"ci {value} on {checkin}", record=opened.hash)
    record_dir.mark(f"verdict-{stem}", {"value": value if verdict else None, "tag": tag if verdict else None})
    try:
        bounded.remove_tree(home.on_host)  # a fresh checkout for every run (D16), whatever the run made of it (D41)
    except OSError as error:
        context.log(f"could not remove {home.on_host}: {error}", record=opened.hash, priority=4)
    return 1 if verdict else 0


async def stop_command_runs(context: NodeContext, systemd, record_dir: RecordDir, opened: OpenRecord,
                            wait_seconds: float = 10.0) -> None:
    """A stop ends the check-in run in progress before the record is answered (C2, C4)."""
    import asyncio

    for checkin in queued(record_dir):
        stem = unit_stem(context.server_code, opened.hash, checkin)
        if record_dir.marked(f"started-{stem}") is None or record_dir.marked(f"ended-{stem}") is not None:
            continue
        try:
            await systemd.stop(stem + ".service")
        except Exception as error:  # it ended meanwhile: its end is already on its way
            context.log(f"could not stop {stem}.service: {error}", record=opened.hash, priority=7)
            continue
        context.log(f"stopping {stem}.service", record=opened.hash)
        deadline = time.monotonic() + wait_seconds
        while not await _gone(systemd, stem + ".service") and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
