"""The web page's drawing (D30): each tool a card rendered from its type (D23).

Pure: a tool, the viewer's letters, the form's token (D43) and an answer in,
HTML out; everything drawn from outside is escaped. A card shows the tool's
fields, its form only where the viewer's capabilities allow it, and the
answer of the last run. A new tool, or a new kind of field, is drawn by
adding to `field_input`; nothing here names a tool.
"""
from __future__ import annotations

import html
import json
from typing import Any

from ..tools.framework import Answer, Tool
from .cli_tools import option_kind

TOKEN_FIELD = "token"  # the form's token (D43): every form carries it, every POST must


def allowed(tool: Tool, capabilities: str) -> bool:
    return tool.capability.held_by(frozenset(capabilities))


def field_input(name: str, info: Any) -> str:
    kind = option_kind(info.annotation)
    label = html.escape(name)
    if kind == "flag":
        return (f'<label>{label} <select name="{label}"><option value="">(default)</option>'
                f'<option>true</option><option>false</option></select></label>')
    hint = " (JSON)" if kind == "json" else ""
    required = " required" if info.is_required() else ""
    return f'<label>{label}{hint} <input name="{label}"{required}></label>'


def card(tool: Tool, capabilities: str, action: str, token: str, answer: Answer | None = None) -> str:
    fields = [(n, i) for n, i in tool.Input.model_fields.items() if n != "dry_run"]
    parts = [f'<div class="ocx-tool" id="tool-{tool.name}"><h2>{tool.name}</h2>',
             f"<p>{html.escape(tool.summary)} Needs: {html.escape(tool.capability.means)}.</p>",
             "<p>Fields: " + (", ".join(f"<code>{html.escape(n)}</code>" for n, _ in fields) or "none") + "</p>"]
    if allowed(tool, capabilities):
        parts.append(f'<form method="POST" action="{html.escape(action)}">'
                     f'<input type="hidden" name="tool" value="{tool.name}">'
                     f'<input type="hidden" name="{TOKEN_FIELD}" value="{html.escape(token)}">')
        parts += [field_input(n, i) + "<br>" for n, i in fields]
        parts.append('<button name="dry_run" value="true">Dry run</button> '
                     '<button name="dry_run" value="false">Run</button></form>')
    else:
        parts.append(f"<p><em>You may not use it here: it needs {html.escape(tool.capability.means)}.</em></p>")
    if answer is not None:
        parts.append(f'<pre class="ocx-answer">{html.escape(json.dumps(answer.model_dump(mode="json"), indent=1))}</pre>')
    return "".join(parts) + "</div>"


def whole_page(viewer: str, cards: list[str]) -> str:
    # D30: a single outer <div class='fossil-doc'> is what makes Fossil draw the
    # page inside the repository's skin, titled by data-title; bare HTML passes as is.
    return (f"<div class='fossil-doc' data-title='OCX tools'><p>You are <b>{html.escape(viewer)}</b>.</p>"
            + "".join(cards) + "</div>")
