"""The tools run by the node's web page (web.py is its door): the viewer as
the tools' caller, a card's form or a JSON call run, and the page drawn."""
from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any, Mapping

from ..tools.caller import Caller
from ..tools.framework import Answer, Stopped, Tool, run_tool
from ..tools.registry import TOOLS
from .cli_tools import input_from_options, option_kind
from .web import Node, base_url, refusal, token, viewer
from .web_cards import TOKEN_FIELD, allowed, card, whole_page


def caller(env: Mapping[str, str], node: Node) -> Caller:
    """The viewer as the tools' caller, on the node (tools/caller.py): it
    writes through the node's own URL, in the session Fossil passed the page."""
    shown = base_url(env)
    config = node.config
    return Caller(viewer(env), Path(env["FOSSIL_REPOSITORY"]), config.url if config else shown, node=config,
                  cookie=env.get("HTTP_COOKIE", ""), shown_url=shown)


def _stopped(name: str, field: str, why: str) -> Answer:
    return Answer(tool=name, dry_run=False, log=[], stopped=Stopped(field=field, why=why))


def run_call(env: Mapping[str, str], node: Node, name: str, raw: Any, given_token: str) -> Answer:
    tool = TOOLS.get(name)
    if tool is None:
        return _stopped(name, "tool", f"{name!r} is not one of {', '.join(TOOLS)}")
    refused = refusal(env, node, given_token)
    if refused is not None:
        return _stopped(tool.name, "caller", refused)
    with caller(env, node) as as_viewer:
        return run_tool(tool, raw, as_viewer)


def answer_call(env: Mapping[str, str], node: Node, body: str) -> dict:
    """A JSON call, `{"tool", "input", "token"}`: the tool's answer."""
    try:
        call = json.loads(body)
        name, raw, given = call["tool"], call.get("input", {}), call.get("token", "")
    except (ValueError, KeyError, TypeError):
        return _stopped("", "input", 'a call is {"tool": NAME, "input": {...}, "token": TOKEN}').model_dump(mode="json")
    if not isinstance(name, str) or not isinstance(given, str):
        return _stopped(str(name), "input", "tool and token are strings").model_dump(mode="json")
    return run_call(env, node, name, raw, given).model_dump(mode="json")


def form_input(tool: Tool, form: Mapping[str, str]) -> dict | str:
    given: dict[str, Any] = {}
    for name, info in tool.Input.model_fields.items():
        value = form.get(name, "")
        if value == "":
            continue
        given[name] = value == "true" if option_kind(info.annotation) == "flag" else value
    return input_from_options(tool, given, None)


def answer_form(env: Mapping[str, str], node: Node, body: str) -> tuple[str | None, Answer]:
    """A card's POST: (the tool's name, its answer)."""
    form = {k: v[-1] for k, v in urllib.parse.parse_qs(body, keep_blank_values=True).items()}
    name = form.get("tool", "")
    tool = TOOLS.get(name)
    if tool is None:
        return None, _stopped(name, "tool", "no such tool")
    raw = form_input(tool, form)
    if not isinstance(raw, dict):
        return tool.name, _stopped(tool.name, raw, "is not valid JSON")
    return tool.name, run_call(env, node, tool.name, raw, form.get(TOKEN_FIELD, ""))


def page(env: Mapping[str, str], node: Node, body: str = "") -> str:
    capabilities = env.get("FOSSIL_CAPABILITIES", "")
    answered, answer = (None, None)
    if env.get("REQUEST_METHOD") == "POST":
        answered, answer = answer_form(env, node, body)
    action, signed = env.get("SCRIPT_NAME", ""), token(node, env)
    cards = []
    for tool in TOOLS.values():
        shown = answer if tool.name == answered else None
        required = [n for n, i in tool.Input.model_fields.items() if i.is_required()]
        if shown is None and allowed(tool, capabilities) and not required and "FOSSIL_REPOSITORY" in env:
            # What it would do now: a dry run needs no field of these tools.
            with caller(env, node) as as_viewer:
                shown = run_tool(tool, {"dry_run": True}, as_viewer)
        cards.append(card(tool, capabilities, action, signed, shown))
    return whole_page(viewer(env), cards)
