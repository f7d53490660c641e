"""Finished workspaces removed (D2): disk does not grow with every run.

Once a record is answered (and each of its check-in runs judged), nothing
of it is needed on the node: whether it was answered is read from the
repository (F3), so a receipt read again finds its response there. When
none of its units runs any more, the node forgets systemd's record of the
ones that failed, removes each run's home (/var/lib/private/ocx-runs/UNIT)
and then the record's own directory: first renamed aside, so a node cut
off while removing never finds half a record that looks open.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..node.bounded import remove_tree
from ..node.cut import cut_here
from ..node.host_paths import RUNS_STATE_DIRECTORY
from ..node.record_dirs import RecordDir
from ..node.run_layout import RunHome, unit_stem
from ..systemd.errors import BusError

if TYPE_CHECKING:
    from .context import NodeContext
    from .tend import Tending

PRIVATE_RUNS = Path("/var/lib/private") / RUNS_STATE_DIRECTORY  # DynamicUser's StateDirectory (D16)
BEING_REMOVED = ".removing-"


async def clean_up(tending: Tending, record_dir: RecordDir) -> None:
    context, systemd, units = tending.context, tending.systemd, tending.units
    own = units.of_record(context.server_code, record_dir.hash)
    live = [unit for unit in own if units.live(unit.name)]
    for unit in live:  # C3: nothing runs for an answered record (an admin's `lost`, D31, say)
        if unit.job != "stop" and unit.active_state != "deactivating":
            try:
                await systemd.stop(unit.name)
            except BusError as error:
                context.log(f"could not stop {unit.name}: {error}", record=record_dir.hash, priority=4)
    if live:
        return  # the next pass, once they have ended
    for unit in own:  # a failed unit stays in systemd's memory until reset
        try:
            await systemd.reset_failed(unit.name)
        except BusError:  # not failed, or gone already
            pass
    try:
        removed = remove_workspace(context, record_dir)
    except OSError as error:
        context.log(f"could not remove its workspace yet: {error}", record=record_dir.hash, priority=4)
        return
    context.log(f"workspace removed ({removed} run homes)", record=record_dir.hash, priority=7)


def run_homes(server_code: str, record_hash: str, root: Path = PRIVATE_RUNS) -> list[Path]:
    """The homes of the record's runs: its session's, or each of its check-in runs'."""
    stem = unit_stem(server_code, record_hash)
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    return [root / name for name in sorted(names) if name == stem or name.startswith(f"{stem}-")]


def remove_workspace(context: NodeContext, record_dir: RecordDir) -> int:
    homes = run_homes(context.server_code, record_dir.hash)
    for home in homes:
        remove_tree(RunHome(home.name).inside)  # the link systemd makes to it (removed, never followed)
        remove_tree(home)
    aside = record_dir.path.with_name(BEING_REMOVED + record_dir.path.name)
    remove_tree(aside)
    if record_dir.path.is_dir():
        os.replace(record_dir.path, aside)
        cut_here(context.config.name, "removing", record_dir.hash)
    remove_tree(aside)
    return len(homes)


def remove_leftovers(records_root: Path) -> None:
    """Directories a node cut off while removing them left aside."""
    try:
        names = os.listdir(records_root)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith(BEING_REMOVED):
            remove_tree(records_root / name)
