"""The console's sections as HTML (docs/console.md): Needs you, In work, Done, Queue.

Pure: what the readers found in, HTML out, every value escaped (words.esc).
Colours are the stylesheet's (style.py); a budget is a bar per limit, an
outcome a coloured word, a verdict a pass or fail mark.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...reading.console import Deliveries, NeedsYou
from ...reading.console_messages import THREAD, AnswerSeen, RecordSeen
from ...systemd.unit_figures import UnitFigures
from .words import ago, duration, esc, excerpt, short, size, stamp

if TYPE_CHECKING:
    from ...protocol.verdict_rules import ReadVerdict
    from ...reading.verdicts import QueueEntry

OUTCOME_TONE = {"exited": "good", "stopped": "calm", "budget": "warn", "refused": "bad", "unenforced": "bad",
                "lost": "lost"}


@dataclass
class WorkItem:
    record: RecordSeen
    units: list[UnitFigures] = field(default_factory=list)
    deliveries: Deliveries = field(default_factory=Deliveries)


@dataclass
class NodeWork:
    """One node's open records: this one's with its units' figures; a node
    elsewhere's (D36) with what the repository says alone."""

    name: str
    server_code: str
    items: list[WorkItem]
    local: bool = True
    systemd: str | None = None  # why systemd could not be read here


def place_link(root: str, record: RecordSeen) -> str:
    if record.placed.place_kind == THREAD:
        return f"{root}/forumpost/{esc(record.hash)}"
    return f"{root}/tktview/{esc(record.placed.place)}"


def outcome_word(outcome: str) -> str:
    return f'<span class="ocx-word ocx-{OUTCOME_TONE.get(outcome, "calm")}">{esc(outcome or "?")}</span>'


def _empty(text: str) -> str:
    return f'<p class="ocx-empty">{esc(text)}</p>'


# -- Needs you --------------------------------------------------------------------

def needs_you(root: str, found: NeedsYou, base: str) -> str:
    items = []
    for ended in found.ended:
        record, answer = ended.record, ended.answer
        reply = (f' <a class="ocx-act" href="{root}/forumpost/{esc(answer.hash)}">reply to mark it seen</a>'
                 if record.placed.place_kind == THREAD else "")
        items.append(f'<li class="ocx-need">{outcome_word(answer.outcome)} your record '
                     f'<a href="{place_link(root, record)}">{esc(excerpt(record.objective, 90))}</a> '
                     f'<span class="ocx-note">{esc(excerpt(answer.note, 200))}</span> '
                     f'<span class="ocx-when" title="{esc(stamp(answer.placed.received))}">'
                     f'{esc(ago(answer.placed.received))}</span>{reply}</li>')
    for question in found.questions:
        items.append(f'<li class="ocx-need"><span class="ocx-word ocx-ask">asks</span> '
                     f'<b>{esc(question.sender or "?")}</b> in your record\'s thread: '
                     f'<a href="{root}/forumpost/{esc(question.post)}">{esc(excerpt(question.text, 160))}</a> '
                     f'<span class="ocx-when" title="{esc(stamp(question.received))}">'
                     f'{esc(ago(question.received))}</span>'
                     f'</li>')
    for item in found.unjudged:
        checkin = item.checkin
        items.append(f'<li class="ocx-need"><span class="ocx-word ocx-warn">no verdict</span> '
                     f'<a href="{root}/info/{esc(checkin.hash)}"><code>{esc(short(checkin.hash))}</code></a> on '
                     f'<b>{esc(checkin.branch)}</b> by {esc(checkin.sender or "?")}: '
                     f'{esc(excerpt(checkin.comment, 90))}'
                     f' (watched by your record <code>{esc(short(item.record))}</code>)</li>')
    since = (f'<p class="ocx-since">Ends shown since {esc(stamp(found.since))} '
             f'(the newest you replied to, or the time in this page\'s address).</p>' if found.since else "")
    if not items:
        return since + _empty("Nothing needs you now.")
    newest = max((e.answer.placed.received for e in found.ended if e.answer.placed.received), default=None)
    seen = (f' <a class="ocx-act" href="{esc(base)}?since={int(newest.timestamp())}">I have seen these ends</a>'
            if newest else "")
    return f'<ul class="ocx-needs-list">{"".join(items)}</ul>{since}<p class="ocx-small">{seen}</p>'


# -- In work ---------------------------------------------------------------------------

def _level(share: float) -> str:
    return "ok" if share < 0.6 else "high" if share < 0.85 else "full"


def bar(label: str, used: float | None, limit: float | None, shown_used: str, shown_limit: str,
        peak: float | None = None, shown_peak: str = "") -> str:
    if used is None:
        figure, fill = "not known here", ""
    elif limit:
        share = min(1.0, used / limit)
        figure = f"{shown_used} of {shown_limit}"
        fill = f'<span class="ocx-fill ocx-{_level(share)}" style="width:{share * 100:.1f}%"></span>'
    else:
        figure, fill = f"{shown_used}, no limit", ""
    marker = ""
    if peak is not None and limit:
        marker = f'<span class="ocx-peak" style="left:{min(1.0, peak / limit) * 100:.1f}%"></span>'
        figure += f", peak {shown_peak}"
    elif peak is not None:
        figure += f", peak {shown_peak}"
    meter = (f' role="meter" aria-valuemin="0" aria-valuemax="{limit:.0f}" aria-valuenow="{used:.0f}"'
             if used is not None and limit else "")
    return (f'<div class="ocx-bar-row" data-bar="{esc(label)}"><span class="ocx-bar-label">{esc(label)}</span>'
            f'<span class="ocx-bar"{meter} aria-label="{esc(label)}">{fill}{marker}</span>'
            f'<span class="ocx-bar-figure">{esc(figure)}</span></div>')


def bars(record: RecordSeen, unit: UnitFigures, now: float) -> str:
    limits = record.limits
    wall = now - unit.active_since if unit.active_since else None
    usage = unit.usage
    return "".join((
        bar("wall", wall, limits.wall, duration(wall), duration(limits.wall)),
        bar("cpu", unit.cpu_seconds, limits.cpu, f"{unit.cpu_seconds or 0:.1f} s", duration(limits.cpu)),
        bar("memory", usage.memory, limits.memory, size(usage.memory), size(limits.memory),
            usage.memory_peak, size(usage.memory_peak)),
        bar("processes", usage.tasks, limits.processes, str(usage.tasks), str(limits.processes),
            usage.tasks_peak, str(usage.tasks_peak)),
    ))


def _state(unit: UnitFigures | None) -> str:
    if unit is None:
        return '<span class="ocx-state ocx-idle">no unit</span>'
    tone = "good" if unit.active_state == "active" else "warn" if unit.live else "bad"
    return (f'<span class="ocx-state ocx-{tone}" title="{esc(unit.name)}">'
            f'{esc(unit.active_state)} ({esc(unit.sub_state)})</span>')


def _deliveries(record: RecordSeen, given: Deliveries, running: set[str], root: str) -> str:
    if record.is_command:
        now = [c for c in given.checkins if c.hash[:12] in running]
        runs = "".join(f'runs check-in <a href="{root}/info/{esc(c.hash)}"><code>{esc(short(c.hash))}</code></a> '
                       f'({esc(excerpt(c.comment, 60))}); ' for c in now)
        waiting = [c for c in reversed(given.checkins) if c.hash not in given.judged and c.hash[:12] not in running]
        listed = "".join(f'<a href="{root}/info/{esc(c.hash)}" title="{esc(c.comment)}"><code>{esc(short(c.hash))}'
                         f'</code></a> ' for c in waiting[:8])
        return (f'<p class="ocx-deliveries">{runs}<b>{len(waiting)}</b> check-in{"" if len(waiting) == 1 else "s"} '
                f'waiting their turn (D18) {listed}</p>')
    count = given.posts + len(given.checkins)
    return (f'<p class="ocx-deliveries"><b>{count}</b> {_plural(count, "delivery", "deliveries")} so far '
            f'({given.posts} {_plural(given.posts, "post")}, {len(given.checkins)} '
            f'{_plural(len(given.checkins), "check-in")}), each written to its program as it came (D13)</p>')


def _plural(count: int, one: str, more: str | None = None) -> str:
    return one if count == 1 else (more or one + "s")


def work_item(item: WorkItem, root: str, admin: bool, now: float, opened: bool = True) -> str:
    record = item.record
    live = [unit for unit in item.units if unit.live]
    unit = live[0] if live else (item.units[0] if item.units else None)
    running = {u.name.removesuffix(".service").rsplit("-", 1)[-1] for u in live} if record.is_command else set()
    head = (f'<div class="ocx-run-head"><span class="ocx-runner">{esc(record.runner or "?")}</span> as '
            f'<b>{esc(record.user or "?")}</b> {_state(unit)} <a class="ocx-place" href="{place_link(root, record)}">'
            f'record <code>{esc(short(record.hash))}</code></a> <span class="ocx-when" '
            f'title="{esc(stamp(record.placed.received))}">sent by {esc(record.placed.sender or "?")} '
            f'{esc(ago(record.placed.received, now))}</span></div>')
    body = [f'<p class="ocx-objective">{esc(excerpt(record.objective, 300))}</p>']
    if unit is not None and unit.live:
        body.append(f'<div class="ocx-bars">{bars(record, unit, now)}</div>')
    elif record.is_command:
        body.append('<p class="ocx-small">No check-in runs now.</p>')
    body.append(_deliveries(record, item.deliveries, running, root))
    if admin and live:
        body.append(f'<details class="ocx-output" data-record="{esc(record.hash)}"{" open" if opened else ""}>'
                    '<summary>Output, last 40 lines</summary>'
                    '<pre class="ocx-tail" aria-live="polite">…</pre></details>')
    return f'<article class="ocx-run" data-record="{esc(record.hash)}">{head}{"".join(body)}</article>'


def in_work(nodes: list[NodeWork], root: str, admin: bool, now: float | None = None, open_outputs: int = 3) -> str:
    """Each node's open records; for an admin the first OPEN_OUTPUTS outputs open."""
    now = now or time.time()
    parts, opened = [], 0
    for node in nodes:
        where = "" if node.local else " (elsewhere: its units are on its own host)"
        parts.append(f'<h3 class="ocx-node">node {esc(node.name)} <code>{esc(short(node.server_code))}</code>{where}'
                     f' <span class="ocx-count">{len(node.items)} open</span></h3>')
        if node.systemd:
            parts.append(f'<p class="ocx-small ocx-bad-text">systemd could not be read here: {esc(node.systemd)}</p>')
        runs = []
        for item in node.items:
            runs.append(work_item(item, root, admin, now, opened < open_outputs))
            opened += any(unit.live for unit in item.units)
        parts.append(f'<div class="ocx-runs">{"".join(runs)}</div>' if runs else _empty("Nothing runs for this node."))
    return "".join(parts)


# -- Done ---------------------------------------------------------------------------------

def done(pairs: list[tuple[RecordSeen, AnswerSeen]], root: str) -> str:
    if not pairs:
        return _empty("No record of this node has been answered yet.")
    rows = []
    for record, answer in pairs:
        took = (answer.placed.received.timestamp() - record.placed.received.timestamp()
                if answer.placed.received and record.placed.received else None)
        rows.append(f'<tr><td>{outcome_word(answer.outcome)}</td>'
                    f'<td class="ocx-what"><a href="{place_link(root, record)}">'
                    f'{esc(excerpt(record.objective, 80))}</a>'
                    f'<div class="ocx-note">{esc(excerpt(answer.note, 240))}</div></td>'
                    f'<td class="ocx-num" title="from its record\'s receipt to its answer\'s">'
                    f'{esc(duration(took))}</td>'
                    f'<td class="ocx-when" title="{esc(stamp(answer.placed.received))}">'
                    f'{esc(ago(answer.placed.received))}'
                    f'</td></tr>')
    return ('<table class="ocx-done"><thead><tr><th>outcome</th><th>record and note</th><th>took</th><th>answered</th>'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table>')


# -- Queue --------------------------------------------------------------------------------

def _mark(verdict: ReadVerdict) -> str:
    parsed = verdict.verdict
    passed = parsed is not None and parsed.judgement.value == "pass"
    hover = (f"{verdict.tag} by {verdict.sender}: {parsed.reason if parsed else verdict.value}"
             f" (against {verdict.objective})")
    return (f'<span class="ocx-verdict ocx-{"pass" if passed else "fail"}" title="{esc(hover)}" tabindex="0">'
            f'{"✔" if passed else "✘"} <span class="ocx-by">{esc(verdict.sender)}</span></span>')


def queue(branches: list[str], branch: str | None, entries: list[QueueEntry], root: str, base: str) -> str:
    options = "".join(f'<option value="{esc(b)}"{" selected" if b == branch else ""}>{esc(b)}</option>'
                      for b in branches)
    picker = (f'<form method="GET" action="{esc(base)}#queue" class="ocx-branch-picker"><label>branch '
              f'<select name="branch" data-autosubmit>{options}</select></label> <button>Show</button></form>')
    if branch is None:
        return picker + _empty("Pick a branch to see its newest check-ins and their verdicts.")
    if not entries:
        return picker + _empty(f"Branch {branch} has no check-in here.")
    rows = []
    for entry in entries:
        marks = "".join(_mark(v) for v in entry.counted) or '<span class="ocx-verdict ocx-none">no verdict</span>'
        if entry.counted:  # D25's combination: one counted fail, against any objective, fails it
            failed = entry.outcome is None or entry.outcome.value != "pass"
            marks = (f'<span class="ocx-word ocx-{"bad" if failed else "good"}">{"failed" if failed else "passed"}'
                     f'</span> {marks}')
        rows.append(f'<li class="ocx-checkin"><span class="ocx-marks">{marks}</span> '
                    f'<a href="{root}/info/{esc(entry.checkin)}"><code>{esc(short(entry.checkin))}</code></a> '
                    f'<span class="ocx-comment">{esc(excerpt(entry.comment, 100))}</span> '
                    f'<span class="ocx-by">by {esc(entry.sender)}</span></li>')
    return picker + f'<ol class="ocx-queue">{"".join(rows)}</ol>'
