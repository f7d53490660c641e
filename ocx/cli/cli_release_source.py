"""`ocx release source`: the repository of OCX's source a node stages check-ins from (D45;
node/releases/source.py, docs/releases.md 'Where a check-in is read from').

The choice is its admin's, written beside the node's configuration; `ocx release stage --checkin`
(and a stage request, which runs it) then resolves the check-in there, gates it there by D25's
rule, and writes its tree from there, all through the Fossil layer (never run or imported as root).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import typer

from .cli_release import _refuse, release_app
from .say import say


def checkin_of_named_source(name: str, prefix: str, config_dir: Path | None = None
                            ) -> tuple[str, Callable[[str], None]] | None:
    """The check-in PREFIX of the repository node NAME's configuration names as its release source, gated
    there (D25, D45), with what writes its tree for the build; None when the node names none."""
    from ..fossil.checkin_tree import source_repository, write_checkin_tree
    from ..node.releases.source import named_source
    from ..reading.release_gate import passing_checkin_of_source

    path = named_source(name, config_dir)
    if path is None:
        return None
    checkin = passing_checkin_of_source(path, prefix)

    def fill(inputs: str) -> None:
        with source_repository(path) as repository:  # checked again: the file may have changed since
            write_checkin_tree(repository, checkin, os.path.join(inputs, "source"))

    return checkin, fill


@release_app.command("source")
def source(repository: str | None = typer.Argument(None, help="A Fossil repository file of OCX's source here."),
           node: str | None = typer.Option(None, "--node", help="The node (default: the one here)."),
           served: bool = typer.Option(False, "--served", help="Stage from the node's served repository again.")
           ) -> None:
    """Name the repository of OCX's source this node stages check-ins from, or show it (D45)."""
    from ..fossil.checkin_tree import source_repository
    from ..fossil.errors import FOSSIL_FAILURES
    from ..node import config as node_config
    from ..node.host_paths import configured_nodes
    from ..node.releases.source import named_source, set_source

    names = [node] if node else configured_nodes()
    if len(names) != 1:
        raise _refuse(ValueError(f"node: {len(names)} nodes here: name one"))
    config = node_config.load(names[0])
    if served and repository is not None:
        raise _refuse(ValueError("release_source: give a repository or --served, not both"))
    if served:
        say(f"{config.name} stages check-ins from its served repository: {set_source(config.name, None)} removed")
        return
    if repository is None:
        try:
            named = named_source(config.name)
        except ValueError as error:
            raise _refuse(error) from None
        say(f"{config.name} stages check-ins from {named or f'its served repository {config.repository}'}")
        return
    path = os.path.abspath(repository)
    try:
        with source_repository(path) as opened:
            project = opened.project_code
    except FOSSIL_FAILURES as error:
        raise _refuse(error) from None
    written = set_source(config.name, path)
    say(f"{config.name} stages check-ins from {path} (project-code {project}): {written}")
