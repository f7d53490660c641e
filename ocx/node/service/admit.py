"""The node's own checks of a well-formed record before it runs (C6, D14, D16, D19, D35).

They need the repository (runner pages, the run user) and the host (the
sandbox paths); the rules themselves are protocol.admission's.
"""
from __future__ import annotations

import os
from pathlib import Path

from ...fossil.repository import Repository
from ...protocol.admission import admission_error
from ...protocol.decide import OpenRecord
from ...protocol.errors import FieldError
from ...protocol.messages import Record
from ..config import NodeConfig
from ..record_dirs import open_records
from .runner_pages import PAGE_PREFIX, RunnerPage, parse_page


def runner_page(repository: Repository, runner: str, served=None) -> RunnerPage | FieldError | None:
    """The runner's page as an admin last wrote it (D14), a FieldError if it is broken, or None.
    SERVED: where senders are known (a node elsewhere asks the server's node, D37)."""
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
    except FieldError as error:
        return FieldError("runner", f"page {PAGE_PREFIX}{runner} ({hash_[:10]}) is not usable: {error}")


def node_files(config: NodeConfig) -> list[Path]:
    # and every run's home (DynamicUser keeps them under /var/lib/private)
    return [*config.own_paths(), Path("/var/lib/private")]


def sandbox_error(record: Record, config: NodeConfig) -> FieldError | None:
    """D16: a path that does not exist, or that names the node's own files, is refused."""
    for kind in ("read_only", "read_write"):
        for index, text in enumerate(getattr(record.sandbox, kind)):
            field, path = f"sandbox.{kind}[{index}]", Path(text)
            if not os.path.exists(path):
                return FieldError(field, f"{text} does not exist on this node")
            resolved = path.resolve()
            for own in node_files(config):
                own = own.resolve() if own.exists() else own
                if resolved == own or own in resolved.parents or resolved in own.parents:
                    return FieldError(field, f"{text} names the node's own files ({own}) (D16)")
    return None


def admission(repository: Repository, config: NodeConfig, record_hash: str, record: Record,
              open_now: list[OpenRecord] | None = None, served=None) -> tuple[FieldError | None, RunnerPage | None]:
    """The first reason to refuse RECORD here, and its runner's page. OPEN_NOW:
    the node's open records, when the caller read them elsewhere than the
    node's state (the tools on the web page, tools/caller.py). SERVED: what
    only the served repository knows (node/served.py), this host's by default."""
    if served is None:
        from ..served import Here

        served = Here(config)
    page = None if record.is_command else runner_page(repository, record.runner, served)
    if isinstance(page, FieldError):
        return page, None
    offers = {record.runner: page.offer(record.runner)} if page is not None else {}
    letters = served.letters(repository, record.user)  # its own letters, never nobody's (D40); None: made (D19)
    error = admission_error(record, offers=offers, node_user=config.node_user, run_user_letters=letters)
    if error is None:
        # D37: a run user works for one node, the node of the first record an admin sent naming it.
        owner = served.works_for(repository, record.user)
        if owner is not None and owner != repository.server_code:
            error = FieldError("user", f"{record.user!r} works for node {owner[:12]}, not this one (D37)")
    if error is None:
        error = sandbox_error(record, config)
    if error is None:
        for opened in open_now if open_now is not None else [other.load()[0] for other in open_records(config)]:
            if opened.hash != record_hash and opened.record.user == record.user:
                # Its password is the other run's; a second run would reset it.
                error = FieldError("user", f"{record.user!r} already runs open record {opened.hash[:12]} on this node")
                break
    return error, page
