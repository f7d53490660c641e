"""The deliberate check (D6): at boot, and by hand, `ocx node check NAME`.

For each record this node holds open: a session whose unit runs is left
alone; one that started but whose unit is gone, and whose end no stop step
recorded (or recorded as a shutdown), is answered `lost`; one never started
is acted on now. `command` records simply go on. Then a normal pass reads
whatever arrived while the node was down.
"""
from __future__ import annotations

import asyncio

from ...fossil.repository import Repository
from ...protocol.messages import Outcome
from .. import config as node_config
from .admit import admission
from .context import NodeContext
from .finish import answer_ended_runs, ended_reports
from .intake import run_pass
from ..layout import unit_name
from ..records import RecordDir, node_lock, open_records
from .respond import Target, respond
from .runs import start_session

RUNNING = ("active", "activating", "reloading", "deactivating")


async def check(context: NodeContext, systemd) -> dict[str, int]:
    counts = {"running": 0, "lost": 0, "started": 0, "answered": 0, "command": 0}
    with node_lock(context.config):
        counts["answered"] = answer_ended_runs(context)
        for record_dir in open_records(context.config):
            opened, _ = record_dir.load()
            if opened.record.is_command:
                counts["command"] += 1
                continue
            state = await systemd.state(unit_name(context.server_code, opened.hash))
            if state is not None and state.active_state in RUNNING:
                counts["running"] += 1
            elif record_dir.marked("started") is not None:
                shutdown = any(e.get("system_stopping") for e in ended_reports(record_dir))
                why = "the node went down during the session" + (" (shut down)" if shutdown else "")
                respond(context, Target.of(record_dir), Outcome.lost, why, record_dir)
                counts["lost"] += 1
            else:
                await _start_missed(context, systemd, record_dir, opened)
                counts["started"] += 1
    await run_pass(context, systemd)
    return counts


async def _start_missed(context: NodeContext, systemd, record_dir: RecordDir, opened) -> None:
    """A record saved but never started (the node died in between): as the hook would have."""
    with Repository(context.config.repository) as repository:
        error, page = admission(repository, context.config, opened.hash, opened.record)
        if error is not None:
            respond(context, Target.of(record_dir), Outcome.refused, str(error), record_dir)
            return
        await start_session(context, systemd, repository, record_dir, opened, page)


SERVER_WAIT_SECONDS = 60.0  # at boot the Fossil server may still be starting


async def check_node(name: str) -> dict[str, int]:
    from ...systemd.manager import Systemd
    from .poke import server_answers

    context = NodeContext.load(node_config.load(name))
    deadline = asyncio.get_running_loop().time() + SERVER_WAIT_SECONDS
    while not server_answers(context.config.url) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.5)  # the answers it writes go through the server
    async with await Systemd.connect() as systemd:
        return await check(context, systemd)


def run_check(name: str) -> dict[str, int]:
    return asyncio.run(check_node(name))
