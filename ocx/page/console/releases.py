"""The console's "Releases" card (D46), for admin and setup viewers: what `current`, `previous`
and `next` name, with their check-ins, digests and smoke results; the stage form, the accept
and roll-back buttons; the preview link; and the releases thread, where each request and the
node's answer to it are on the record.

Each button is a form of the `release` tool (ocx/tools/release.py), posted as every card's form
is (page.py `_posted`): with the page's token (D43), run as the viewer (D21, D22), so what it
writes is a request in the releases thread as the viewer, which the node carries out as root.
The page never moves a link itself: it runs as the Fossil server's account. Its answer is
shown in the `release` tool's card. Every value is escaped (words.esc).
"""
from __future__ import annotations

from typing import Any

from ...node.host_paths import RELEASES_DIRECTORY
from .forms import TOKEN_FIELD, TOOL_FIELD
from .words import esc

PREVIEW = "/ext/ocx-next"  # the staged release's page (D46); served by another part of OCX
LINKS = (("current", "what the node's own services run"), ("previous", "where a roll-back goes"),
         ("next", "what accept would take"))


def _release(facts: dict[str, Any] | None) -> str:
    if facts is None:
        return '<span class="ocx-empty">none</span>'
    named = f'<code>{esc(str(facts.get("release", "")))}</code>'
    if "checkin" not in facts:
        return f'{named} <span class="ocx-small">{esc(str(facts.get("record", "")))}</span>'
    smoke = ", ".join(f"{step}: {result}" for step, result in sorted(dict(facts.get("smoke") or {}).items()))
    return (f'{named}<br><span class="ocx-small">check-in <code>{esc(str(facts["checkin"])[:16])}</code> · '
            f'digest <code>{esc(str(facts["digest"])[:16])}</code><br>smoke: {esc(smoke or "none")}</span>')


def _form(action: str, token: str, step: str, inner: str, button: str) -> str:
    return (f'<form method="POST" action="{esc(action)}#tool-release" class="ocx-form ocx-release-{esc(step)}">'
            f'<input type="hidden" name="{TOOL_FIELD}" value="release">'
            f'<input type="hidden" name="{TOKEN_FIELD}" value="{esc(token)}">'
            f'<input type="hidden" name="action" value="{esc(step)}">{inner}'
            '<div class="ocx-buttons"><button name="dry_run" value="true">Dry run</button> '
            f'<button name="dry_run" value="false" class="ocx-primary">{esc(button)}</button></div></form>')


def card(action: str, token: str, root: str, thread: str | None,
         links: dict[str, dict[str, Any] | None] | None = None) -> str:
    """The card; LINKS as node/releases/shown.py reads them (read here when not given)."""
    if links is None:
        from ...node.releases.shown import described

        try:
            links = described(RELEASES_DIRECTORY)
        except OSError as error:  # a root this account cannot read: said, never guessed at
            return f'<div class="ocx-card" id="releases-card"><p class="ocx-empty">{esc(str(error))}</p></div>'
    rows = "".join(f'<tr><th title="{esc(why)}">{esc(name)}</th><td>{_release(links.get(name))}</td></tr>'
                   for name, why in LINKS)
    staged = links.get("next") is not None
    told = (f'<a href="{esc(root)}/forumpost/{esc(thread)}">the releases thread</a>' if thread
            else "the releases thread (started by the first request)")
    stage = ('<div class="ocx-field ocx-req"><label for="f-release-stage-checkin">check-in</label>'
             '<input type="text" id="f-release-stage-checkin" name="checkin" required>'
             '<small class="ocx-help">A check-in whose counted ci verdicts pass (D25), by its hash (10 or more '
             'hex digits).</small></div>')
    return ('<div class="ocx-card ocx-wide" id="releases-card"><h3>Releases '
            '<span class="ocx-needs ocx-held">admin or setup</span></h3>'
            f'<table class="ocx-releases">{rows}</table>'
            + (f'<p><a href="{esc(PREVIEW)}">Preview next</a> (its page, forms dry-run only)</p>' if staged else "")
            + f'<p class="ocx-small">Each button asks the node on the record, as you: it acts as root and '
              f'answers in {told} (D46).</p>'
            + _form(action, token, "stage", stage, "Stage")
            + _form(action, token, "accept", "", "Accept next")
            + _form(action, token, "rollback", "", "Roll back")
            + "</div>")
