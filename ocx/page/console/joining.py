"""The console's "Nodes" section, for an admin or setup viewer: the nodes of this repository and a
form that makes a join token for a host to join as node NAME (D36).

The form POSTs to the page with D43's token, as every card does; the page
makes the token (web_joining.py: admin or setup only) and shows it once,
with the command to run on the host. It is kept on the server only as a
hash (page/join_tokens.py).
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .forms import TOKEN_FIELD
from .words import esc

if TYPE_CHECKING:
    from .view import View

FORM_FIELD, JOIN_FORM = "form", "join-token"  # a POST of this form, not of a tool's card


def is_join_post(form: Mapping[str, str]) -> bool:
    return form.get(FORM_FIELD) == JOIN_FORM


def make(view: View, form: Mapping[str, str]) -> dict[str, Any]:
    """The page's answer to the form: web_joining's, after D30's and D43's checks."""
    from ..web_joining import make_join_token
    from ..web_viewer import refusal

    refused = refusal(view.env, view.node, form.get(TOKEN_FIELD, ""))
    if refused is not None:
        return {"refused": {"field": "caller", "why": refused}}
    return make_join_token(view.env, view.env.get("FOSSIL_REPOSITORY", ""), {"name": form.get("name", ""),
                                                                            "replace": form.get("replace") == "1"})


def section(view: View, token: str, answer: Mapping[str, Any] | None, given: str = "") -> str:
    """The nodes, and the join form with what it answered last, if it was posted now."""
    from ...node.serving import registry

    nodes = registry.every_node(view.repository, None)
    rows = "".join(f"<tr><td>{esc(n.name)}</td><td><code>{esc((n.server_code or '(no clone yet)')[:12])}</code></td>"
                   f"<td>{esc(n.node_user)}</td><td>{esc(_ago(n.heard))}</td></tr>" for n in nodes)
    listed = (f'<table class="ocx-table"><tr><th>node elsewhere</th><th>server-code</th><th>node user</th>'
              f"<th>last heard</th></tr>{rows}</table>") if rows else '<p class="ocx-empty">No node elsewhere yet.</p>'
    form = (f'<form method="POST" action="{esc(view.base)}#nodes" class="ocx-form">'
            f'<input type="hidden" name="{FORM_FIELD}" value="{JOIN_FORM}">'
            f'<input type="hidden" name="{TOKEN_FIELD}" value="{esc(token)}">'
            f'<label>Node name <input name="name" value="{esc(given)}" required></label> '
            '<label class="ocx-check"><input type="checkbox" name="replace" value="1"> '
            "replace the node registered under this name "
            "(its open records are answered lost)</label> "
            '<button class="ocx-primary">Make a join token</button></form>'
            '<p class="ocx-small">A join token lets one host join as that node once, within an hour, without '
            "an admin's login: <code>ocx node init --name NAME --server URL --token-file FILE</code> as root "
            "there. It is shown once.</p>")
    return listed + form + (answered(answer) if answer is not None else "")


def answered(answer: Mapping[str, Any]) -> str:
    refused = answer.get("refused")
    if refused:
        return (f'<p class="ocx-refused" id="join-refused">Refused: {esc(refused.get("field", ""))}: '
                f'{esc(refused.get("why", ""))}</p>')
    until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(answer["expires"]))
    return (f'<div class="ocx-answer" id="join-made"><p>A join token for node <b>{esc(answer["name"])}</b>, '
            f"good once until {esc(until)}. Copy it now: it is not shown again.</p>"
            f'<pre class="ocx-join-token">{esc(answer["join_token"])}</pre>'
            f"<p>On the host, as root: put it in a file (or give <code>--token-file -</code> and paste it), then "
            f"<code>ocx node init --name {esc(answer['name'])} --server URL --token-file FILE</code>.</p></div>")


def _ago(heard: float | None) -> str:
    if heard is None:
        return "never"
    seconds = max(0, int(time.time() - heard))
    return f"{seconds} s ago" if seconds < 120 else f"{seconds // 60} min ago"
