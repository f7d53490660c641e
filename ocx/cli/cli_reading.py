"""The readers on the command line (V2, D25, D33): `ocx verdicts CHECKIN`,
`ocx queue BRANCH`, `ocx activity`; each readable, or exact with `--json`.

Which repository, as the tools find it (docs/tools.md): `--repository FILE`
(`-R`), or `--at-node NAME` on the node's host; with neither, the one node
configured on this host. Verdicts must be read where they were received
(F2, D29): a clone names itself the sender of everything it pulled.

Each reader is defined once, here, as an argparse parser (`parsers`):
`ocx verdicts|queue|activity` starts straight on it (cli/launch.py), and
the whole command line lists and forwards to it (`register`). Not Typer:
Typer 0.29 imports pydantic and rich and builds a pydantic adapter for
every option, about 200 ms of a reader's start-up, more than its reading
(docs/node.md, 'The readers').
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from .say import say

if TYPE_CHECKING:
    from datetime import datetime

    import typer

    from ..fossil.repository import Repository
    from ..node.activity import Placed
    from ..protocol.verdict_rules import ReadVerdict

class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own words, and Typer's exit code for a usage error
        self.print_usage(sys.stderr)
        say(f"{self.prog}: {message}", err=True)
        say(f"Try '{self.prog} --help' for help.", err=True)
        raise SystemExit(2)


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0")
    return value


def _where_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-R", "--repository", metavar="FILE",
                        help="The repository file to read (on a node: the served one).")
    parser.add_argument("--at-node", metavar="NAME",
                        help="On the node's host: the node's name (reads its served repository).")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print exactly, as JSON.")


def _parser(name: str, summary: str) -> _Parser:
    return _Parser(prog=f"ocx {name}", description=summary)


def _verdicts() -> _Parser:
    verdicts = _parser("verdicts", "Every sender's latest `audited` and `ci` verdict on CHECKIN per objective, "
                                   "whether and why each counts, and whether the check-in passed (V2, D25).")
    verdicts.add_argument("checkin", metavar="CHECKIN", help="A check-in: its hash, or 10+ leading hex digits (D11).")
    _where_options(verdicts)
    return verdicts


def _queue() -> _Parser:
    queue = _parser("queue", "The newest check-ins of BRANCH, oldest first, each passed or failed with its "
                             "counted verdicts, or none (D25, D33).")
    queue.add_argument("branch", metavar="BRANCH", help="A branch's name.")
    _where_options(queue)
    queue.add_argument("--newest", type=_non_negative, default=50, metavar="N",
                       help="Show only the newest N check-ins (0: all; default 50).")
    return queue


def _activity() -> _Parser:
    activity = _parser("activity", "This node's open records with their units' live state, and the latest "
                                   "responses (D33).")
    _where_options(activity)
    activity.add_argument("--latest", type=int, default=10, metavar="N",
                          help="How many of the latest responses to show (default 10).")
    return activity


_PARSERS = {"verdicts": _verdicts, "queue": _queue, "activity": _activity}


def parsers() -> dict[str, _Parser]:
    """Each reader's whole definition: its arguments, options and help."""
    return {name: make() for name, make in _PARSERS.items()}


def main(argv: list[str]) -> int:
    """Run the reader ARGV names (its name first); the exit code."""
    parser = _PARSERS[argv[0]]()  # only its own: each parser built costs a reader's start-up
    readers: dict[str, Callable[..., None]] = {"verdicts": verdicts, "queue": queue, "activity": activity}
    read = readers[argv[0]]
    try:
        read(**vars(parser.parse_args(argv[1:])))
    except SystemExit as done:  # argparse's --help and usage errors, and _fail
        return done.code if isinstance(done.code, int) else 1
    return 0


def register(app: typer.Typer) -> None:
    """List the readers in the whole command line and hand them their words as given."""
    import typer

    def forward(name: str) -> Callable[[typer.Context], None]:
        def run(ctx: typer.Context) -> None:
            raise typer.Exit(main([name, *ctx.args]))
        run.__annotations__ = {"ctx": typer.Context, "return": None}  # resolved here, not from this module's names
        return run

    for name, parser in parsers().items():
        app.command(name, help=parser.description, add_help_option=False,
                    context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(forward(name))


def _echo(text: str = "") -> None:
    say(text)  # a comment, tag value, objective or note may be a run's bytes (D41)


def _fail(command: str, why: str, code: int = 1) -> NoReturn:
    say(f"ocx {command}: {why}", err=True)
    raise SystemExit(code)


def where(command: str, repository: str | None, at_node: str | None) -> tuple[str, str]:
    """(the repository file, its node's user: D20's usual one when no node is
    configured for it). The configuration is read as its file holds it: a
    reader's start-up is part of what it costs (docs/node.md, 'The readers')."""
    from ..node.host_paths import DEFAULT_NODE_USER, configured_nodes, node_of, plain_config

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


def _open(command: str, path: str) -> Repository:
    from ..fossil.errors import FOSSIL_FAILURES
    from ..fossil.repository import Repository

    try:
        return Repository(path)
    except FOSSIL_FAILURES as error:  # missing, unreadable, or a file sqlite cannot read: say so
        _fail(command, f"cannot read repository {path}: {error}")


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "an unknown time"


def _verdict_lines(verdict: ReadVerdict) -> list[str]:
    mark = "counts" if verdict.counts else "no    "
    objective = verdict.objective or "none"
    sender = verdict.sender or ("(no sender)" if verdict.uid is None else f"(deleted login, uid {verdict.uid})")
    return [f"  {mark}  {verdict.tag:<7} {sender}: {verdict.value}",
            f"          objective {objective}; {verdict.why}"]


def verdicts(checkin: str, repository: str | None, at_node: str | None, as_json: bool) -> None:
    """Every sender's latest `audited` and `ci` verdict on CHECKIN per objective, and whether and why it
    counts (V2, D25)."""
    from ..protocol.verdict_rules import outcome
    from ..reading.verdicts import NotACheckin, checkin_verdicts_json, resolve_checkin
    from ..reading.verdicts import verdicts as read_verdicts

    path, _ = where("verdicts", repository, at_node)
    with _open("verdicts", path) as repo:
        try:
            full = resolve_checkin(repo, checkin)
        except NotACheckin as error:
            _fail("verdicts", str(error))
        if as_json:
            _echo(json.dumps(checkin_verdicts_json(repo, full)))
            return
        found = repo.checkin(full)
        standing = read_verdicts(repo, full, found)
    _echo(f"check-in {full} on {found.branch or '(no branch)'}: sent by {found.sender.login}, "
               f"user {found.user} (its verdicts count only from others, V2)")
    if not standing:
        _echo("  no verdicts")
    for verdict in standing:
        for line in _verdict_lines(verdict):
            _echo(line)
    counting = sum(v.counts for v in standing)
    judged = outcome(standing)
    _echo(f"{counting} of {len(standing)} count: "
          f"{'no counted verdict' if judged is None else 'passed' if judged.value == 'pass' else 'failed'} (D25)")


def queue(branch: str, repository: str | None, at_node: str | None, as_json: bool, newest: int) -> None:
    """The newest check-ins of BRANCH, oldest first, each passed or failed with its counted verdicts, or
    none (D25, D33)."""
    from ..reading.verdicts import queue as read_queue
    from ..reading.verdicts import queue_json

    path, _ = where("queue", repository, at_node)
    with _open("queue", path) as repo:
        entries = read_queue(repo, branch, newest or None)
        total = repo.branch_size(branch) if newest and len(entries) == newest else len(entries)
    if as_json:
        _echo(json.dumps(queue_json(branch, entries, total)))
        return
    shown = f"the newest {len(entries)} of {total}" if total > len(entries) else f"{total}"
    _echo(f"branch {branch}: {shown} check-in{'' if total == 1 else 's'}, oldest first")
    for entry in entries:
        _echo(f"  {entry.checkin[:12]}  by {entry.sender}: {entry.comment.splitlines()[0] if entry.comment else ''}")
        if not entry.counted:
            _echo("      no counted verdict")
        else:  # D25: passed when a counted verdict passes and none fails, each sender's latest per objective
            _echo(f"      {'passed' if entry.outcome and entry.outcome.value == 'pass' else 'failed'}"
                  f" ({len(entry.counted)} counted verdict{'' if len(entry.counted) == 1 else 's'})")
        for v in entry.counted:
            parsed = v.verdict
            assert parsed is not None  # only a V1 verdict counts (verdict_rules._judge)
            _echo(f"      {v.tag} {parsed.judgement.value} by {v.sender}, against {v.objective}: {parsed.reason}")


def activity(repository: str | None, at_node: str | None, as_json: bool, latest: int) -> None:
    """This node's open records with their units' live state, and the latest responses (D33)."""
    from ..fossil.errors import FOSSIL_FAILURES
    from ..node.activity import activity_json, add_units, read_activity
    from ..reading.activity import NodeMessagesRepository  # only the posts that may be this node's messages

    path, node_user = where("activity", repository, at_node)
    try:
        with NodeMessagesRepository(path) as opened:
            found = read_activity(opened, node_user, latest)
    except FOSSIL_FAILURES as error:  # missing, unreadable, or not a repository: say so, no trace
        _fail("activity", f"cannot read repository {path}: {error}")
    add_units(found)  # through sd-bus, without asyncio
    if as_json:
        _echo(json.dumps(activity_json(found)))
        return
    _echo(f"node {found.node} (node user {found.node_user}), repository {path}")
    _echo(f"open records: {len(found.open)}")
    for entry in found.open:
        record, placed = entry.record, entry.placed
        _echo(f"  {placed.hash[:12]}  {record.runner} as {record.user}, from {placed.sender} "
                   f"at {_when(placed.received)}, {placed.place_kind} {placed.place[:12]}, wall {record.budget.wall}")
        _echo(f"      objective: {record.objective}")
        if found.systemd:
            continue
        if not entry.units:
            _echo("      no unit" + (" (a command record waits for its check-ins)" if record.is_command else ""))
        for unit in entry.units:
            _echo(f"      {unit.name}  {unit.active_state}/{unit.sub_state}")
    if found.systemd:
        _echo(f"  units: systemd not reachable here ({found.systemd})")
    _echo(f"latest responses: {len(found.responses)}")
    for placed in found.responses:
        _echo(_response_line(placed))


def _response_line(placed: Placed) -> str:
    from ..protocol.messages import Response  # loaded already: read_activity found the responses by it

    message = placed.message
    assert isinstance(message, Response)  # Activity.responses holds only responses
    return (f"  {placed.hash[:12]}  answers {message.answers[:12]}: {message.outcome.value}, {message.note}"
            f"  (from {placed.sender})")
