"""The node's page as a console (D30; docs/console.md):
what needs the viewer, what runs and what it has spent, what ended and how,
a branch's verdicts, then the tools.

    GET                  the whole page, in Fossil's skin (D30)
    GET ?part=work       "In work" again, for the page's script
    GET ?output=RECORD   the last 40 lines its program printed, JSON (admin or setup)
    GET ?branch=B        the page with B's queue;  ?since=T  ends before T seen
    POST (a card)        the tool run as the viewer (D21), its card holding what was sent

It reads the repository (console readers), systemd and the journal
(ocx/systemd), and writes only through the tools, as the viewer, from a
POST with the page's token (D30, D43). Fossil clears an ext program's
environment and passes it who is looking (view.py).
"""
from __future__ import annotations

import json
import re
import secrets
import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...fossil.repository import Repository
from ...protocol.errors import FieldError
from ...reading.console import branches, deliveries, needs_you, queue_of
from ...reading.console_messages import NodeRecords, node_records
from ...systemd.sd_bus import BusUnreadable
from ..web_viewer import Node, Preview, refusal, token
from . import catalog, joining, sections
from .cards import Defaults, card
from .forms import TOKEN_FIELD, TOOL_FIELD, tool_input
from .style import CSS
from .view import View
from .words import esc, plain, short

if TYPE_CHECKING:                      # unit_figures is imported when a page shows units
    from ...systemd.unit_figures import UnitFigures
from ...protocol.numerals import is_digits

HTML, JSON = "text/html; charset=utf-8", "application/json"
DONE_SHOWN = 20
OUTPUT_LINES = 40
OPEN_OUTPUTS = 3  # outputs shown open at first; the others open on a click
SCRIPT = Path(__file__).with_name("console.js")
_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def respond(env: Mapping[str, str], node: Node, body: str = "") -> tuple[str, str]:
    """(content type, text) for any request that is not a JSON call (web.py)."""
    repository_path = env.get("FOSSIL_REPOSITORY")
    if not repository_path:
        return HTML, "<p>The OCX page runs as an extension of a Fossil server (D30).</p>"
    with Repository(repository_path) as repository:
        view = View(env, node, repository)
        if "output" in view.query:
            return JSON, json.dumps(output(view, view.query["output"]))
        seen = _records(view)
        if view.query.get("part") == "work":
            return HTML, work_html(view, seen)
        return HTML, whole_page(view, seen, body if env.get("REQUEST_METHOD") == "POST" else None)


def _records(view: View) -> NodeRecords | None:
    facts = view.facts
    if facts is None:
        return None
    return node_records(view.repository, view.repository.server_code, facts.node_user, view.admins)


# -- In work ----------------------------------------------------------------------------

def _units(server_code: str) -> tuple[list[UnitFigures], str | None]:
    from ...systemd.unit_figures import read_units

    try:
        return read_units([f"ocx-{short(server_code)}-*.service"]), None
    except (BusUnreadable, OSError) as error:
        return [], str(error) or type(error).__name__


def node_work(view: View, seen: NodeRecords) -> list[sections.NodeWork]:
    """This node's open records the viewer may read, each with its units and
    deliveries. A node elsewhere (D36) would add its own NodeWork here."""
    shown = [record for record in seen.open if view.reads(record)]
    units, why = _units(seen.node) if shown else ([], None)
    given = deliveries(view.repository, seen, shown)
    items = []
    for record in shown:
        stem = f"ocx-{short(seen.node)}-{short(record.hash)}"
        mine = [u for u in units if u.name == f"{stem}.service" or u.name.startswith(stem + "-")]
        items.append(sections.WorkItem(record, mine, given[record.hash]))
    name = view.facts.name if view.facts else ""
    return [sections.NodeWork(name, seen.node, items, True, why)]


def work_html(view: View, seen: NodeRecords | None) -> str:
    if seen is None:
        return '<p class="ocx-empty">This page does not know a node on this repository.</p>'
    return sections.in_work(node_work(view, seen), view.root, view.admin, open_outputs=OPEN_OUTPUTS)


def output(view: View, record_hash: str) -> dict[str, Any]:
    """The last lines the record's live unit printed, for an admin or setup viewer."""
    from ...systemd.journal_tail import JournalUnreadable, printed

    answer: dict[str, Any] = {"record": record_hash, "unit": None, "lines": [], "why": None}
    if not view.admin:
        return {**answer, "why": "only admin or setup see what a run printed"}
    seen = _records(view)
    if not _HASH.fullmatch(record_hash) or seen is None or record_hash not in {r.hash for r in seen.open}:
        return {**answer, "why": "no open record of this node by that hash"}
    units, why = _units(seen.node)
    stem = f"ocx-{short(seen.node)}-{short(record_hash)}"
    live = [u for u in units if u.live and (u.name == f"{stem}.service" or u.name.startswith(stem + "-"))]
    if not live:
        return {**answer, "why": why or "no unit of it runs now"}
    try:
        lines = printed(live[0].name, OUTPUT_LINES)
    except JournalUnreadable as error:
        return {**answer, "unit": live[0].name, "why": str(error)}
    return {**answer, "unit": live[0].name, "lines": [plain(line.text) for line in lines]}


# -- the whole page ------------------------------------------------------------------------

def _since(view: View) -> datetime | None:
    given = view.query.get("since", "")
    try:
        return datetime.fromtimestamp(int(given), tz=UTC) if is_digits(given) else (
            datetime.fromisoformat(given).astimezone(UTC) if given else None)
    except (ValueError, OverflowError):
        return None


def _defaults(view: View, tool: dict[str, Any]) -> Defaults:
    facts = view.facts
    admins = sorted(view.admins - ({facts.node_user} if facts else set()))
    runner = next((f.get("default") for f in tool["fields"] if f["name"] == "runner"), None) or "RUNNER"
    return Defaults({"this_node": view.repository.server_code,
                     "new_run_user": f"a new user, e.g. {runner}-{secrets.token_hex(3)}",  # C5
                     "admins_now": ", ".join(admins)})


def _posted(view: View, body: str) -> tuple[str | None, dict[str, str], dict[str, Any] | None]:
    """A card's POST: (its tool, what was sent, the tool's answer as JSON)."""
    form = {k: v[-1] for k, v in urllib.parse.parse_qs(body, keep_blank_values=True).items()}
    name = form.get(TOOL_FIELD, "")
    spec = catalog.by_name(name)

    def stopped(field: str, why: str) -> dict[str, Any]:
        return {"tool": name, "dry_run": form.get("dry_run") == "true", "log": [], "result": None,
                "stopped": {"field": field, "why": why}}

    if spec is None:
        return None, form, None
    refused = refusal(view.env, view.node, form.get(TOKEN_FIELD, ""),
                      dry_run=view.node.preview is not None)  # the preview's tools: run_call makes them dry runs
    if refused is not None:
        return name, form, stopped("caller", refused)
    try:
        raw = tool_input(spec, form)
    except FieldError as fault:
        return name, form, stopped(fault.field, fault.why)
    from ..web_tools import run_call

    return name, form, run_call(view.env, view.node, name, raw, form.get(TOKEN_FIELD, "")).model_dump(mode="json")


def _section(ident: str, title: str, content: str, count: int | None = None) -> str:
    counted = f' <span class="ocx-count">{count}</span>' if count is not None else ""
    return f'<section id="{ident}"><h2>{esc(title)}{counted}</h2>{content}</section>'


def whole_page(view: View, seen: NodeRecords | None, body: str | None) -> str:
    posted: str | None = None
    given: dict[str, str] = {}
    answer: dict[str, Any] | None = None
    joined: dict[str, Any] | None = None  # the join form's answer (joining.py)
    form = {k: v[-1] for k, v in urllib.parse.parse_qs(body or "", keep_blank_values=True).items()}
    if body is not None and joining.is_join_post(form):
        joined = joining.make(view, form)
    elif body is not None:
        posted, given, answer = _posted(view, body)
    if posted is not None:  # what it wrote is read back below, in this same page
        seen = _records(view)
    root, login = view.root, view.login
    parts = [preview_banner(view.node.preview, root)] if view.node.preview is not None else []
    parts += [f'<p class="ocx-strip">You are <b>{esc(login)}</b>'
             + (" (admin)" if view.admin else "") + (f' · node <b>{esc(view.facts.name)}</b> '
                                                     f'<code>{esc(short(view.repository.server_code))}</code>'
                                                     if view.facts else " · no node of this page here")
             + ' · <span id="ocx-refreshed" class="ocx-small"></span></p>']
    work, needs, answered, needing = "", "", [], None
    if seen is not None:
        if login == "nobody":
            needs = f'<p class="ocx-empty"><a href="{root}/login">Log in</a> to see what needs you.</p>'
        else:
            found = needs_you(view.repository, seen, login, _since(view))
            needs, needing = sections.needs_you(root, found, view.base), len(found)
        work = work_html(view, seen)
        answered = [(r, a) for r, a in seen.answered(DONE_SHOWN * 3) if view.reads(r)][:DONE_SHOWN]
    open_count = sum(1 for r in seen.open if view.reads(r)) if seen is not None else 0
    parts.append('<nav class="ocx-nav"><a href="#needs-you">Needs you</a><a href="#in-work">In work</a>'
                 '<a href="#done">Done</a><a href="#queue">Queue</a><a href="#tools">Tools</a></nav>')
    parts.append(_section("needs-you", "Needs you", needs or '<p class="ocx-empty">Nothing needs you now.</p>',
                          needing))
    parts.append(_section("in-work", "In work", f'<div id="ocx-work">{work}</div>', open_count))
    parts.append(_section("done", "Done", sections.done(answered, root)))
    parts.append(_section("queue", "Queue", _queue(view)))
    cards, signed = [], token(view.node, view.env)
    if view.admin:
        parts.append(_section("nodes", "Nodes", joining.section(view, signed, joined, form.get("name", ""))))
        parts.append(_section("releases", "Releases", _releases(view, signed)))
    elif joined is not None:
        parts.append(_section("nodes", "Nodes", joining.answered(joined)))
    for tool in catalog.tools():
        shown = tool["name"] == posted
        cards.append(card(tool, view.capabilities, view.base, signed, _defaults(view, tool),
                          given if shown else None, answer if shown else None, root))
    parts.append(_section("tools", "Tools", f'<div class="ocx-cards">{"".join(cards)}</div>'))
    nonce = view.env.get("FOSSIL_NONCE", "")
    script = f'<script nonce="{esc(nonce)}">{SCRIPT.read_text()}</script>' if nonce else ""
    # D30: one outer <div class='fossil-doc'> makes Fossil draw the page in the repository's skin.
    return (f"<div class='fossil-doc' data-title='OCX console'><style>{CSS}</style>"
            f'<div class="ocx-console" id="ocx-console" data-base="{esc(view.base)}" data-every="3000">'
            + "".join(parts) + f"</div>{script}</div>")


def preview_banner(preview: Preview, root: str) -> str:
    """What every page of /ext/ocx-next says first (D46)."""
    return (f'<p class="ocx-preview" id="ocx-preview"><b>Preview</b> of the staged release '
            f'<code>{esc(preview.release)}</code>, check-in <code>{esc(preview.checkin)}</code>: not accepted; '
            'every form here is a dry run, and nothing is written whatever is sent (D46). '
            f'<a href="{esc(root)}/ext/ocx">The node\'s page</a></p>')


def _releases(view: View, signed: str) -> str:
    """The Releases card (releases.py, D46): admin and setup only, as the release tool is."""
    from ...node.releases.thread import releases_thread
    from .releases import card as releases_card

    facts = view.facts
    if facts is None:
        return '<p class="ocx-empty">This page does not know a node on this repository.</p>'
    thread = releases_thread(view.repository, facts.name, facts.node_user)
    return releases_card(view.base, signed, view.root, thread)


def _queue(view: View) -> str:
    if not view.reads_code:
        return '<p class="ocx-empty">Reading check-ins needs the capability to check out (o).</p>'
    names = branches(view.repository)
    branch = view.query.get("branch")
    entries = queue_of(view.repository, branch) if branch else []
    return sections.queue(names, branch, entries, view.root, view.base)
