"""The follower of a node elsewhere (D38, D39): `ocx node follow NAME`.

One long-lived service (units/ocx-follow@.service) holds one request open
to the server's node, which answers as soon as something arrives for it or
after at most 60 s with nothing (page/receipts.py); it then renews it
at once. When the answer lists receipts, it pulls the node's clone, as the
node user, and pokes the node's socket: the node's own pass then reads the
receipts from the server, exactly as the server's node reads its own
(D26); the answer that woke it is handed over (link.hand_over), so the
pass's first read asks the server nothing more. When who holds admin or setup changed, it pokes the node too (D24:
its pass ends a run whose user was given admin). Nothing here repeats a
request on a fixed interval while the server answers.

When the server answers and refuses this node (its node user taken off the
list or replaced, its password changed: ServerRefused, LoginNotTaken), asking again would
only repeat a request on a timer while the server is reachable, which D38
rules out: the follower says so in the journal, naming the refusal, and
ends with REFUSED, which its unit does not restart (RestartPreventExitStatus=);
`ocx node init` run again, once an admin has registered the node again,
starts it. The runs go on meanwhile (D39).

When the server cannot be reached (the host cut off, the server down), the
runs go on (D39) and the follower tries again after a growing pause, up to
LOST_MOST seconds; once it reaches the server again, and at its own start,
it pulls and starts the node's deliberate check (D6: ocx-check@NAME), which
answers what ended meanwhile, each record once (it reads the server's
answers first, C4), and acts on what arrived. Its own held request may
outlive a short cut (TCP holds it); the node's other processes, which
failed to reach the server meanwhile (a response it owes), leave a mark
(link.lost_mark), and the follower's next answer from the server runs the
check for them too.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..node.config import NodeConfig, load
from ..node.server_link import LoginNotTaken, ServerLink, ServerRefused, hand_over, lost_mark
from ..node.wake import poke

WAIT = 60.0  # D38: the most the server holds a request
REFUSED = 78  # EX_CONFIG: the server refuses this node; units/ocx-follow@.service restarts no such end
LOST_FIRST, LOST_MOST = 1.0, 10.0  # pauses between tries while the server cannot be reached


def read_mark(config: NodeConfig) -> int:
    """The last receipt the node handled (its pass's mark, D2): where to ask from."""
    try:
        return int(json.loads((config.state_dir / "mark.json").read_text())["rcvid"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def start_check(name: str) -> None:
    """Queue the node's deliberate check (D6) through systemd."""
    from ..systemd import unit_files
    from ..systemd.bus import Bus

    async def queue() -> None:
        bus = await Bus.connect()
        try:
            await unit_files.queue_start(bus, f"ocx-check@{name}.service")
        finally:
            bus.close()

    asyncio.run(queue())


@dataclass
class Follower:
    config: NodeConfig
    link: ServerLink
    pull: Callable[[], None]
    wake: Callable[[], None]
    check: Callable[[], None]
    log: Callable[[str], None] = print
    sleep: Callable[[float], None] = time.sleep
    hand: Callable[[int, dict[str, Any]], None] = lambda since, answer: None  # the answer, for the pass it wakes

    admins: str | None = None  # the digest of who holds admin or setup, as last answered

    def step(self, since: int, reached: bool) -> tuple[int, bool]:
        """One held request and what follows it: (where to ask from next, whether the server answered)."""
        try:
            # Held, unless the server is just reached: then at once, and the deliberate check
            # follows (D38: at its start, and once the server is back).
            answer = self.link.receipts(since, wait=WAIT if reached else 0.0, admins=self.admins, facts=True)
            admins_changed = self.admins is not None and answer.get("admins") != self.admins
            self.admins = answer.get("admins")
            owed = lost_mark(self.config.state_dir)
            if not reached or owed.exists():
                owed.unlink(missing_ok=True)
                self.pull()
                self.check()
                self.log(f"server {self.config.url} reached: pulled, check started")
            if answer.get("receipts"):
                began = time.monotonic()
                self.pull()
                self.hand(since, answer)
                self.log(f"receipts {since + 1}..{answer.get('last')}: pulled in "
                         f"{(time.monotonic() - began) * 1000:.0f} ms, handed over with "
                         f"{len(answer.get('records') or {})} records' facts; poking the node")
            if answer.get("receipts") or admins_changed:
                self.wake()
            return int(answer.get("last", since)), True
        except (ServerRefused, LoginNotTaken):
            raise  # reached and refused: run() ends, no pause and no retry (D38)
        except Exception as error:  # cut off, the server down: the runs go on (D39)
            if reached:
                self.log(f"server {self.config.url} lost: {type(error).__name__}: {error}")
            return since, False

    def run(self, steps: int | None = None) -> ServerRefused | LoginNotTaken | None:
        """Until STEPS are done (for ever when None), or the server refuses this node: that refusal."""
        since, reached, pause = read_mark(self.config), False, LOST_FIRST
        while steps is None or steps > 0:
            try:
                since, now_reached = self.step(since, reached)
            except (ServerRefused, LoginNotTaken) as refused:
                said = f"{refused.field}: {refused.why}" if isinstance(refused, ServerRefused) else str(refused)
                self.log(f"server {self.config.url} refuses this node: {said}; not asking "
                         f"again (D38): once an admin registers it again, `ocx node init --name {self.config.name} "
                         f"--server {self.config.url}` here starts the follower")
                return refused
            if now_reached:
                pause = LOST_FIRST
            else:
                self.sleep(pause)
                pause = min(pause * 2, LOST_MOST)
            reached = now_reached
            steps = None if steps is None else steps - 1
        return None


def follow(name: str) -> None:
    from ..systemd import journal

    config = load(name)

    def log(message: str) -> None:
        try:
            journal.send(message, 6, OCX_NODE_NAME=name)
        except OSError:
            print(f"ocx follow: {message}", flush=True)

    from ..node.served import Elsewhere

    def wake() -> None:
        error = poke(name, "receipts")  # when the node is not listening, its path unit and check find the work
        if error is not None:
            log(f"poke: {error}")

    def hand(since: int, answer: dict[str, Any]) -> None:
        try:
            hand_over(config.state_dir, since, answer)
        except OSError as error:  # the pass then asks the server itself
            log(f"receipts not handed over: {error}")

    refused = Follower(config, ServerLink.of_node(config), pull=Elsewhere(config).pull,
                       wake=wake, check=lambda: start_check(name), log=log, hand=hand).run()
    if refused is not None:
        raise SystemExit(REFUSED)
