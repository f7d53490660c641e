"""The node's own checks of a well-formed record before it runs (C6, D14, D16, D19, D35).

They need the repository (runner pages, the run user) and the host (the
sandbox paths); the rules themselves are protocol.admission's.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..fossil.repository import Repository
from ..protocol.admission import Inadmissible, check_admission
from ..protocol.decide import OpenRecord
from ..protocol.errors import FieldError
from ..protocol.messages import Record
from .config import NodeConfig
from .record_dirs import open_records
from .runner_pages import PAGE_PREFIX, RunnerPage, parse_page

if TYPE_CHECKING:
    from .served import Elsewhere, Here


def runner_page(repository: Repository, runner: str, served: Here | Elsewhere | None = None) -> RunnerPage | None:
    """The runner's page as an admin last wrote it (D14), or None; Inadmissible
    naming `runner` if it is broken. SERVED: where senders are known (a node
    elsewhere asks the server's node, D37)."""
    if served is None:
        version = repository.wiki_latest_by_admin(PAGE_PREFIX + runner)
        found = None if version is None else (version.hash, version.content)
    else:
        found = served.runner_page(repository, PAGE_PREFIX + runner)
    if found is None:
        return None
    hash_, content = found
    try:
        return parse_page(content)
    except FieldError as error:  # the page's own field at fault: the record's is its runner
        raise Inadmissible("runner", f"page {PAGE_PREFIX}{runner} ({hash_[:10]}) is not usable: {error}") from None


def node_files(config: NodeConfig) -> list[Path]:
    # and every run's home (DynamicUser keeps them under /var/lib/private)
    return [*config.own_paths(), Path("/var/lib/private")]


def check_sandbox(record: Record, config: NodeConfig) -> None:
    """D16: a path that does not exist, or that names the node's own files, is refused."""
    for kind in ("read_only", "read_write"):
        for index, text in enumerate(getattr(record.sandbox, kind)):
            field, path = f"sandbox.{kind}[{index}]", Path(text)
            if not os.path.exists(path):
                raise Inadmissible(field, f"{text} does not exist on this node")
            resolved = path.resolve()
            for own in node_files(config):
                own = own.resolve() if own.exists() else own
                if resolved == own or own in resolved.parents or resolved in own.parents:
                    raise Inadmissible(field, f"{text} names the node's own files ({own}) (D16)")


def admission(repository: Repository, config: NodeConfig, record_hash: str, record: Record,
              open_now: list[OpenRecord] | None = None, served: Here | Elsewhere | None = None) -> RunnerPage | None:
    """RECORD's runner's page, once every check passes; else Inadmissible naming
    the first field at fault. OPEN_NOW: the node's open records, when the
    caller read them elsewhere than the node's state (the tools on the web
    page, tools/caller.py). SERVED: what only the served repository knows
    (node/served.py), this host's by default. Anything else it raises (the
    server's node unreachable, say) is no refusal: the caller tries again."""
    if served is None:
        from .served import Here

        served = Here(config)
    page = None if record.is_command else runner_page(repository, record.runner, served)
    offers = {record.runner: page.offer(record.runner)} if page is not None else {}
    letters = served.letters(repository, record.user)  # its own letters, never nobody's (D40); None: made (D19)
    check_admission(record, offers=offers, node_user=config.node_user, run_user_letters=letters)
    # D37: a run user works for one node, the node of the first record an admin sent naming it.
    owner = served.works_for(repository, record.user)
    if owner is not None and owner != repository.server_code:
        raise Inadmissible("user", f"{record.user!r} works for node {owner[:12]}, not this one (D37)")
    check_sandbox(record, config)
    for opened in open_now if open_now is not None else [other.load()[0] for other in open_records(config)]:
        if opened.hash != record_hash and opened.record.user == record.user:
            # Its password is the other run's; a second run would reset it.
            raise Inadmissible("user", f"{record.user!r} already runs open record {opened.hash[:12]} on this node")
    return page
