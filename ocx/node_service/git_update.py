"""The node's git mirror brought up to date after a receipt (D49, D26: never on a timer).

    python -m ocx.node_service.git_update NAME

The node's service starts this, as root, in a transient unit of its own
(`ocx-git-NAME.service`, bounded: what it exports was sent by runs and
people, D41) after a pass that found receipts the mirror has not seen
(`after_pass`), and never waits for it: a record is never held back by the
mirror. Asked while one runs, it is not started twice; the one running
reads the repository's newest receipt again before it stops (D26) and
updates again while more came. When it ends it pokes the node, whose next
pass starts it again if anything came between its last look and its end.

One update: the node's copy pulled from the served repository and its
authors written (fossil/git_export.py, protocol/git_mirror.py), the export,
the notes of every check-in with verdict tags (D25, D49), the served
repository brought to it in one atomic fetch (git/mirror.py), the receipt
it reached written down (`mark`), then the forges' push (D50,
git/forges.py) on a thread of its own, which holds back neither the next
update nor any record (this unit is not the node's service).
"""
from __future__ import annotations

import json
import os
import select
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import write_atomically
from ..fossil.git_export import exported_commits, keep_copy, leaves
from ..fossil.repository import Repository
from ..git import mirror
from ..git.fast_import_filter import export
from ..git.forges import PUSH_SECONDS, ForgePusher, ForgeResult
from ..git.program import git_available
from ..node import config as node_config
from ..node.host_paths import GIT_SERVED_NAME, git_served_root
from ..node.inotify import IN_CLOSE_WRITE, IN_MODIFY, drain, watch
from ..protocol.git_mirror import author_addresses, note_text
from ..protocol.verdict_rules import VERDICT_TAGS, counted
from ..reading.verdicts import verdicts_of

if TYPE_CHECKING:
    from ..systemd.manager import Systemd
    from .context import NodeContext

UPDATES_AT_MOST = 20  # in one run of the unit: then it ends, pokes, and the next pass starts it again
MEMORY_MAX = 1024 * 1024 * 1024
WALL_SECONDS = 900.0


def unit_name(node: str) -> str:
    return f"ocx-git-{node}.service"


def mirror_dir(config: node_config.NodeConfig) -> Path:
    return config.state_dir / "git"


def served_path(config: node_config.NodeConfig) -> Path:
    return Path(git_served_root(config.name)) / GIT_SERVED_NAME


def mark_path(config: node_config.NodeConfig) -> Path:
    return mirror_dir(config) / "mark.json"


def read_mark(config: node_config.NodeConfig) -> int:
    """The newest receipt the served mirror holds; 0 when none (D2: lost, so made again)."""
    try:
        return int(json.loads(mark_path(config).read_text())["rcvid"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def checkins_with_verdicts(repository: Repository) -> list[str]:
    return repository.checkins_tagged(VERDICT_TAGS)


def update_once(config: node_config.NodeConfig) -> int:
    """One update (module doc); the receipt it reached."""
    home = mirror_dir(config) / "home"
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(mirror_dir(config), 0o700)
    served_file = Path(config.repository)
    with Repository(served_file) as repository:
        reached = repository.max_rcvid()
        addresses = author_addresses(((user.login, user.contact) for user in repository.users()),
                                     repository.checkin_authors())
    copy, work = mirror_dir(config) / "copy.fossil", mirror_dir(config) / "work"
    keep_copy(served_file, copy, home=home)
    export(copy, work, addresses, home=home)
    commits = exported_commits(work)
    mirror.keep_leaves(work, {leaf: commits[leaf] for leaf in leaves(copy) if leaf in commits}, home=home)
    with Repository(served_file) as repository:
        standing = verdicts_of(repository, [c for c in checkins_with_verdicts(repository) if c in commits])
    mirror.write_notes(work, {commits[c]: note_text(counted(v)) for c, v in standing.items()}, home=home)
    served = served_path(config)
    mirror.make_served(served, os.stat(served_file).st_gid, home=home)
    mirror.publish(work, served, home=home)
    write_atomically(mark_path(config), json.dumps({"rcvid": reached, "at": time.time()}) + "\n")
    return reached


def newest(config: node_config.NodeConfig) -> int:
    with Repository(config.repository) as repository:
        return repository.max_rcvid()


def update(config: node_config.NodeConfig) -> int:
    """Updates until the repository's newest receipt is the one the last reached (D26), each
    followed by the forges' push (D50) on a thread of its own, so a slow forge holds back no
    update: while a push runs, a receipt (the repository's inotify) starts the next update at
    once; the unit ends when the pushes asked for have ended. How many updates it made."""
    ended, told = os.pipe()

    def report(results: list[ForgeResult]) -> None:  # on the pusher's thread: the journal, then a wake
        for result in results:
            print(f"forge {result.url}: {'pushed' if result.ok else 'not pushed: ' + result.detail}", flush=True)
        try:
            os.write(told, b".")
        except OSError:  # the unit gave up waiting for this push and closed the pipe: nothing to wake
            pass

    pusher = (ForgePusher(served_path(config), config.git_forges, config.git_credentials_file,
                          home=mirror_dir(config) / "home", report=report) if config.git_forges else None)
    changes = watch(config.repository, IN_CLOSE_WRITE | IN_MODIFY)
    count = 0
    try:
        while count < UPDATES_AT_MOST:
            drain(changes)
            reached = update_once(config)
            count += 1
            if pusher is not None:
                pusher.push_soon()
            while newest(config) <= reached:
                if pusher is None or pusher.wait(0):
                    return count
                select.select([changes, ended], [], [])  # a receipt, or the push's end: both events
                drain(changes)
                _drain_pipe(ended)
        if pusher is not None:  # UPDATES_AT_MOST: the push asked for ends before the unit does
            pusher.wait(PUSH_SECONDS * len(config.git_forges) + 10)
        return count
    finally:
        for fd in (changes, ended, told):
            os.close(fd)


def _drain_pipe(fd: int) -> None:
    os.set_blocking(fd, False)
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


async def after_pass(context: NodeContext, systemd: Systemd) -> bool:
    """Start the update in its unit when the repository holds receipts the mirror has not
    (module doc); whether it started one. Never waits for it, never raises for it."""
    from ..systemd.units import TransientService

    config = context.config
    if config.elsewhere or not git_available():
        return False
    try:
        with Repository(config.repository) as repository:
            if repository.max_rcvid() <= read_mark(config):
                return False
        service = TransientService(
            name=unit_name(config.name), argv=[sys.executable, "-m", "ocx.node_service.git_update", config.name],
            description=f"OCX node {config.name}: its git mirror brought up to date (D49)",
            memory_max=MEMORY_MAX, runtime_max_sec=WALL_SECONDS, tasks_max=64, add_ref=False)
        return bool(await systemd.start_once(service))
    except Exception as error:  # the mirror never stops a pass: logged, tried at the next receipt
        context.log(f"git mirror not started: {error}", priority=4)
        return False


def main(argv: list[str]) -> int:
    from ..node.wake import poke

    config = node_config.load(argv[0])
    began = time.monotonic()
    count = update(config)  # a failure ends the unit failed, in the journal; the next receipt tries again
    print(f"git mirror of {config.name}: {count} update(s) in {time.monotonic() - began:.3f} s, through receipt "
          f"{read_mark(config)}", flush=True)
    poke(config.name, "git mirror updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
