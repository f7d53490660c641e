"""The tools run by the node's web page (web.py is its door): the viewer as
the tools' caller, and a call run, from a card's form (console/page.py) or
in JSON from the CLI and MCP off the node."""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..tools.caller import Caller
from ..tools.framework import Answer, Stopped, run_tool
from ..tools.registry import TOOLS
from .web_viewer import Node, base_url, refusal, viewer


def caller(env: Mapping[str, str], node: Node) -> Caller:
    """The viewer as the tools' caller, on the node (tools/caller.py): it
    writes through the node's own URL, in the session Fossil passed the page."""
    shown = base_url(env)
    config = node.config
    return Caller(viewer(env), Path(env["FOSSIL_REPOSITORY"]), config.url if config else shown, node=config,
                  cookie=env.get("HTTP_COOKIE", ""), shown_url=shown)


def _stopped(name: str, field: str, why: str) -> Answer:
    return Answer(tool=name, dry_run=False, log=[], stopped=Stopped(field=field, why=why))


def run_call(env: Mapping[str, str], node: Node, name: str, raw: object, given_token: str) -> Answer:
    tool = TOOLS.get(name)
    if tool is None:
        return _stopped(name, "tool", f"{name!r} is not one of {', '.join(TOOLS)}")
    preview = node.preview is not None
    refused = refusal(env, node, given_token, dry_run=preview)
    if refused is not None:
        return _stopped(tool.name, "caller", refused)
    if preview and isinstance(raw, dict):  # the preview's own word, whatever was posted (D46)
        raw = {**raw, "dry_run": True}
    with caller(env, node) as as_viewer:
        return run_tool(tool, raw, as_viewer)


def answer_call(env: Mapping[str, str], node: Node, body: str) -> dict[str, Any]:
    """A JSON call, `{"tool", "input", "token"}`: the tool's answer."""
    try:
        call = json.loads(body)
        name, raw, given = call["tool"], call.get("input", {}), call.get("token", "")
    except (ValueError, KeyError, TypeError):
        return _stopped("", "input", 'a call is {"tool": NAME, "input": {...}, "token": TOKEN}').model_dump(mode="json")
    if not isinstance(name, str) or not isinstance(given, str):
        return _stopped(str(name), "input", "tool and token are strings").model_dump(mode="json")
    return run_call(env, node, name, raw, given).model_dump(mode="json")
