"""The readers on the command line (V2, D25, D33): `ocx verdicts CHECKIN`,
`ocx queue BRANCH`, `ocx activity`; each readable, or exact with `--json`.

Which repository, as the tools find it (docs/tools.md): `--repository FILE`
(`-R`), or `--at-node NAME` on the node's host; with neither, the one node
configured on this host. Verdicts must be read where they were received
(F2, D29): a clone names itself the sender of everything it pulled.
"""
from __future__ import annotations

import json
from typing import NoReturn, Optional

import typer

REPOSITORY = typer.Option(None, "--repository", "-R", help="The repository file to read (on a node: the served one).")
AT_NODE = typer.Option(None, "--at-node", help="On the node's host: the node's name (reads its served repository).")
AS_JSON = typer.Option(False, "--json", help="Print exactly, as JSON.")


def register(app: typer.Typer) -> None:
    app.command("verdicts")(verdicts)
    app.command("queue")(queue)
    app.command("activity")(activity)


def readers_app() -> typer.Typer:
    """The readers alone, as `ocx` shows them: started without the tools' models (entry/launch.py)."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(app)
    return app


def _fail(command: str, why: str, code: int = 1) -> NoReturn:
    typer.echo(f"ocx {command}: {why}", err=True)
    raise typer.Exit(code)


def where(command: str, repository: str | None, at_node: str | None) -> tuple[str, str]:
    """(the repository file, its node's user: D20's usual one when no node is
    configured for it). The configuration is read as its file holds it: a
    reader's start-up is part of what it costs (issue 15)."""
    from ..node.host_paths import DEFAULT_NODE_USER, configured_nodes, plain_config
    from .hook import node_of

    try:
        if at_node:
            config = plain_config(at_node)
            return config["repository"], config.get("node_user", DEFAULT_NODE_USER)
        if repository:
            name = node_of(repository)
            return repository, plain_config(name).get("node_user", DEFAULT_NODE_USER) if name else DEFAULT_NODE_USER
        configured = configured_nodes()
        if len(configured) == 1:
            config = plain_config(configured[0])
            return config["repository"], config.get("node_user", DEFAULT_NODE_USER)
    except (OSError, ValueError, KeyError) as error:
        _fail(command, f"cannot read the node's configuration: {error}")
    _fail(command, "say which repository: --repository FILE (-R), or --at-node NAME on the node's host", 2)


def _open(command: str, path: str):
    from ..fossil.errors import FOSSIL_FAILURES
    from ..fossil.repository import Repository

    try:
        return Repository(path)
    except FOSSIL_FAILURES as error:  # missing, unreadable, or a file sqlite cannot read: say so
        _fail(command, f"cannot read repository {path}: {error}")


def _when(moment) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "an unknown time"


def _verdict_lines(verdict) -> list[str]:
    mark = "counts" if verdict.counts else "no    "
    objective = verdict.objective or "none"
    return [f"  {mark}  {verdict.tag:<7} {verdict.sender or '(no sender)'}: {verdict.value}",
            f"          objective {objective}; {verdict.why}"]


def verdicts(checkin: str = typer.Argument(..., metavar="CHECKIN", help="A check-in: its hash, or 10+ leading hex digits (D11)."),
             repository: Optional[str] = REPOSITORY, at_node: Optional[str] = AT_NODE, as_json: bool = AS_JSON) -> None:
    """Every sender's latest `audited` and `ci` verdict on CHECKIN, and whether and why it counts (V2, D25)."""
    from ..reading.verdicts import NotACheckin, checkin_verdicts_json, resolve_checkin, verdicts as read_verdicts

    path, _ = where("verdicts", repository, at_node)
    with _open("verdicts", path) as repo:
        try:
            full = resolve_checkin(repo, checkin)
        except NotACheckin as error:
            _fail("verdicts", str(error))
        if as_json:
            typer.echo(json.dumps(checkin_verdicts_json(repo, full)))
            return
        found = repo.checkin(full)
        standing = read_verdicts(repo, full, found)
    typer.echo(f"check-in {full} on {found.branch or '(no branch)'}: sent by {found.sender.login}, "
               f"user {found.user} (its verdicts count only from others, V2)")
    if not standing:
        typer.echo("  no verdicts")
    for verdict in standing:
        for line in _verdict_lines(verdict):
            typer.echo(line)
    counting = sum(v.counts for v in standing)
    typer.echo(f"{counting} of {len(standing)} count")


def queue(branch: str = typer.Argument(..., metavar="BRANCH", help="A branch's name."),
          repository: Optional[str] = REPOSITORY, at_node: Optional[str] = AT_NODE, as_json: bool = AS_JSON,
          newest: int = typer.Option(50, "--newest", min=0, help="Show only the newest N check-ins (0: all).")) -> None:
    """The newest check-ins of BRANCH, oldest first, each with its counted verdicts, or none (D33)."""
    from ..reading.verdicts import queue as read_queue, queue_json

    path, _ = where("queue", repository, at_node)
    with _open("queue", path) as repo:
        entries = read_queue(repo, branch, newest or None)
        total = repo.branch_size(branch) if newest and len(entries) == newest else len(entries)
    if as_json:
        typer.echo(json.dumps(queue_json(branch, entries, total)))
        return
    shown = f"the newest {len(entries)} of {total}" if total > len(entries) else f"{total}"
    typer.echo(f"branch {branch}: {shown} check-in{'' if total == 1 else 's'}, oldest first")
    for entry in entries:
        typer.echo(f"  {entry.checkin[:12]}  by {entry.sender}: {entry.comment.splitlines()[0] if entry.comment else ''}")
        if not entry.counted:
            typer.echo("      no counted verdict")
        for v in entry.counted:
            typer.echo(f"      {v.tag} {v.verdict.judgement.value} by {v.sender}, against {v.objective}: {v.verdict.reason}")


def activity(repository: Optional[str] = REPOSITORY, at_node: Optional[str] = AT_NODE, as_json: bool = AS_JSON,
             latest: int = typer.Option(10, "--latest", help="How many of the latest responses to show.")) -> None:
    """This node's open records with their units' live state, and the latest responses (D33)."""
    from ..fossil.errors import FOSSIL_FAILURES
    from ..node.service.activity import activity as read_activity, activity_json

    path, node_user = where("activity", repository, at_node)
    try:
        found = read_activity(path, node_user, latest)
    except FOSSIL_FAILURES as error:  # missing, unreadable, or not a repository: say so, no trace
        _fail("activity", f"cannot read repository {path}: {error}")
    if as_json:
        typer.echo(json.dumps(activity_json(found)))
        return
    typer.echo(f"node {found.node} (node user {found.node_user}), repository {path}")
    typer.echo(f"open records: {len(found.open)}")
    for entry in found.open:
        record, placed = entry.record, entry.placed
        typer.echo(f"  {placed.hash[:12]}  {record.runner} as {record.user}, from {placed.sender} "
                   f"at {_when(placed.received)}, {placed.place_kind} {placed.place[:12]}, wall {record.budget.wall}")
        typer.echo(f"      objective: {record.objective}")
        if found.systemd:
            continue
        if not entry.units:
            typer.echo("      no unit" + (" (a command record waits for its check-ins)" if record.is_command else ""))
        for unit in entry.units:
            typer.echo(f"      {unit.name}  {unit.active_state}/{unit.sub_state}")
    if found.systemd:
        typer.echo(f"  units: systemd not reachable here ({found.systemd})")
    typer.echo(f"latest responses: {len(found.responses)}")
    for placed in found.responses:
        message = placed.message
        typer.echo(f"  {placed.hash[:12]}  answers {message.answers[:12]}: {message.outcome.value}, {message.note}"
                   f"  (from {placed.sender})")
