"""The tools on a web page (D30): an ext program of Fossil's server, drawn in
the repository's skin, for the viewer Fossil names (FOSSIL_USER,
FOSSIL_CAPABILITIES).

Each tool is a card rendered from its type (D23): its fields, and its form
only where the viewer's capabilities allow it. A POST runs the tool as the
viewer: the page writes through Fossil's own forms with the viewer's own
session cookie, so the viewer is the sender (D21). A change is taken only
from a POST whose Referer is under this repository's base URL, as Fossil
checks its own forms (D30).

Install: a file `ocx` in the server's --extroot, executable, holding
`#!/bin/sh` and `exec /opt/ocx/venv/bin/python -m ocx.entry.web`.
"""
from __future__ import annotations

import html
import json
import os
import sys
import urllib.parse
from pathlib import Path
from typing import Any, Mapping

from ..fossil.web import WebSession
from ..tools.caller import Caller
from ..tools.framework import Answer, Tool, run_tool
from ..tools.registry import TOOLS
from .cli_tools import input_from_options, option_kind


def base_url(env: Mapping[str, str]) -> str:
    """This repository's base URL: what precedes /ext in the page's own address."""
    script = env.get("SCRIPT_NAME", "")
    root = script[: script.find("/ext")] if "/ext" in script else ""
    return f"{env.get('REQUEST_SCHEME', 'http')}://{env.get('HTTP_HOST', '')}{root}"


def referer_allowed(env: Mapping[str, str]) -> bool:
    referer, base = env.get("HTTP_REFERER", ""), base_url(env)
    return bool(env.get("HTTP_HOST")) and (referer == base or referer.startswith(base + "/"))


def allowed(tool: Tool, capabilities: str) -> bool:
    return tool.capability.held_by(frozenset(capabilities))


def _field_input(name: str, info: Any) -> str:
    kind = option_kind(info.annotation)
    label = html.escape(name)
    if kind == "flag":
        return (f'<label>{label} <select name="{label}"><option value="">(default)</option>'
                f'<option>true</option><option>false</option></select></label>')
    hint = " (JSON)" if kind == "json" else ""
    required = " required" if info.is_required() else ""
    return f'<label>{label}{hint} <input name="{label}"{required}></label>'


def card(tool: Tool, capabilities: str, action: str, answer: Answer | None = None) -> str:
    fields = [(n, i) for n, i in tool.Input.model_fields.items() if n != "dry_run"]
    parts = [f'<div class="ocx-tool" id="tool-{tool.name}"><h2>{tool.name}</h2>',
             f"<p>{html.escape(tool.summary)} Needs: {html.escape(tool.capability.means)}.</p>",
             "<p>Fields: " + (", ".join(f"<code>{html.escape(n)}</code>" for n, _ in fields) or "none") + "</p>"]
    if allowed(tool, capabilities):
        parts.append(f'<form method="POST" action="{html.escape(action)}">'
                     f'<input type="hidden" name="tool" value="{tool.name}">')
        parts += [_field_input(n, i) + "<br>" for n, i in fields]
        parts.append('<button name="dry_run" value="true">Dry run</button> '
                     '<button name="dry_run" value="false">Run</button></form>')
    else:
        parts.append(f"<p><em>You may not use it here: it needs {html.escape(tool.capability.means)}.</em></p>")
    if answer is not None:
        parts.append(f'<pre class="ocx-answer">{html.escape(json.dumps(answer.model_dump(mode="json"), indent=1))}</pre>')
    return "".join(parts) + "</div>"


def form_input(tool: Tool, form: Mapping[str, str]) -> dict | str:
    given: dict[str, Any] = {}
    for name, info in tool.Input.model_fields.items():
        value = form.get(name, "")
        if value == "":
            continue
        given[name] = value == "true" if option_kind(info.annotation) == "flag" else value
    return input_from_options(tool, given, None)


def answer_post(env: Mapping[str, str], body: str) -> tuple[str | None, Answer]:
    """Run the tool a POST names as the viewer; (its name, its answer)."""
    form = {k: v[-1] for k, v in urllib.parse.parse_qs(body, keep_blank_values=True).items()}
    tool = TOOLS.get(form.get("tool", ""))
    if tool is None:
        return None, Answer(tool=form.get("tool", ""), dry_run=False, log=[], stopped={"field": "tool", "why": "no such tool"})
    if not referer_allowed(env):
        return tool.name, Answer(tool=tool.name, dry_run=False, log=[],
                                 stopped={"field": "caller", "why": "a change is taken only from this repository's own pages (Referer, D30)"})
    raw = form_input(tool, form)
    if not isinstance(raw, dict):
        return tool.name, Answer(tool=tool.name, dry_run=False, log=[], stopped={"field": raw, "why": "is not valid JSON"})
    login, base = env.get("FOSSIL_USER", "nobody"), base_url(env)
    caller = Caller(login, None, Path(env["FOSSIL_REPOSITORY"]), base)
    # The viewer's own session: Fossil's forms record the viewer as sender (D21).
    caller._web = WebSession(base, login, None, cookie=env.get("HTTP_COOKIE", ""))
    with caller:
        return tool.name, run_tool(tool, raw, caller)


def _required(tool: Tool) -> list[str]:
    return [name for name, info in tool.Input.model_fields.items() if info.is_required()]


def page(env: Mapping[str, str], body: str = "") -> str:
    capabilities = env.get("FOSSIL_CAPABILITIES", "")
    answered, answer = (None, None)
    if env.get("REQUEST_METHOD") == "POST":
        answered, answer = answer_post(env, body)
    action = env.get("SCRIPT_NAME", "")
    viewer = html.escape(env.get("FOSSIL_USER", "nobody"))
    cards = []
    for tool in TOOLS.values():
        shown = answer if tool.name == answered else None
        if shown is None and allowed(tool, capabilities) and not _required(tool) and "FOSSIL_REPOSITORY" in env:
            # What it would do now: a dry run needs no field of these tools.
            with Caller(env.get("FOSSIL_USER", "nobody"), None, Path(env["FOSSIL_REPOSITORY"]), base_url(env)) as caller:
                shown = run_tool(tool, {"dry_run": True}, caller)
        cards.append(card(tool, capabilities, action, shown))
    # D30: a single outer <div class='fossil-doc'> is what makes Fossil draw the
    # page inside the repository's skin, titled by data-title; bare HTML passes as is.
    return (f"<div class='fossil-doc' data-title='OCX tools'><p>You are <b>{viewer}</b>.</p>"
            + "".join(cards) + "</div>")


def main() -> int:
    env = dict(os.environ)
    length = int(env.get("CONTENT_LENGTH") or 0)
    body = sys.stdin.buffer.read(length).decode("utf-8", "replace") if length else ""
    text = page(env, body)
    sys.stdout.write("Content-Type: text/html; charset=utf-8\r\n\r\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
