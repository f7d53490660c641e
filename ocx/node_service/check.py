"""The deliberate check (D6): at boot, and by hand, `ocx node check NAME`.

It is one pass of the node (intake.py), after waiting for the Fossil
server: every record is tended from its marks and what systemd holds now
(tend.py), so a session whose unit runs is left alone; one that started
but whose unit is gone, and whose end no stop step recorded (or recorded
as a shutdown), is answered `lost`; one never started is started now;
`command` records simply go on. Then it reads whatever arrived while the
node was down. A record it could not finish is left to the node's
service, which it pokes: the check itself succeeds (D6: a failing
boot check left the records a restart cut off unanswered).
"""
from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING

from ..node import config as node_config
from ..node.faults import describe
from ..node.wake import poke, server_answers
from .context import NodeContext
from .intake import PassReport, run_pass

if TYPE_CHECKING:
    from ..systemd.manager import Systemd

PASS_TRIES = 3  # a pass that fails as a whole (the bus not there yet, say) is tried again


async def check(context: NodeContext, systemd: Systemd) -> dict[str, int]:
    report = PassReport()
    while True:  # a pass that admitted records leaves later receipts to the next (intake.py)
        done = await _one_pass(context, systemd)
        report.receipts += done.receipts
        report.actions += done.actions
        if done.retry_in is not None:
            report.retry(done.retry_in)
        if not done.more:
            break
    if report.retry_in is not None:
        poke(context.config.name, "check")  # the node's service tries again, within each record's bound
    counts = Counter(report.actions)
    return {"receipts": report.receipts, "started": counts["started"], "answered": counts["answered"],
            "lost": counts["decided-lost"], "to try again": int(report.retry_in is not None)}


async def _one_pass(context: NodeContext, systemd: Systemd) -> PassReport:
    for tried in range(1, PASS_TRIES + 1):
        try:
            return await run_pass(context, systemd)
        except Exception as error:  # the check's pass as a whole (the bus not there yet): tried again
            context.log(f"check: the pass failed ({tried} of {PASS_TRIES}): {describe(error)}", priority=3)
            if tried == PASS_TRIES:
                poke(context.config.name, "check")  # the node's service tries on its own
                raise
            await asyncio.sleep(2.0 * tried)
    raise AssertionError("unreachable: the last try raises")


SERVER_WAIT_SECONDS = 60.0  # at boot the Fossil server may still be starting


async def check_node(name: str) -> dict[str, int]:
    from ..systemd.manager import Systemd

    context = NodeContext.load(node_config.load(name))
    deadline = asyncio.get_running_loop().time() + SERVER_WAIT_SECONDS
    while not server_answers(context.config.url) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.5)  # the answers it writes go through the server
    async with await Systemd.connect() as systemd:
        return await check(context, systemd)


def run_check(name: str) -> dict[str, int]:
    return asyncio.run(check_node(name))
