"""The tools on the node's web page (D30), and the node's door for `ocx TOOL`
and `ocx mcp` called from any host.

An ext program of the node's Fossil server (in its --extroot). Fossil
authenticates the viewer and passes the page its login (FOSSIL_USER,
FOSSIL_CAPABILITIES) and its session cookie; the page runs the tools on the
node, as that login, reading the served repository and the node's
configuration (tools/caller.py), and writes through Fossil in the viewer's
own session, so the viewer is the sender (D21). Three kinds of request:

- GET: the cards (web_cards.py), each form carrying the token;
- a form POST from a card: the tool is run, its answer shown in its card;
- JSON (`/ext/ocx?json`): a GET answers the viewer's login and token; a
  POST of `{"tool", "input", "token"}` runs the tool and answers
  the tool's one shape. This is how the CLI and MCP call from anywhere
  (tools/remote.py): the same run, log, result and artifact as on the node.

A change is taken only from a POST whose Referer is under this repository's
base URL, as Fossil checks its own forms (D30), and which carries the token
bound to the viewer's login session by the node's page secret (D43): Fossil
serves a run's checked-in files from the same origin, and their forms have
no token.

Installed by `ocx node init`: a file `ocx` in the server's --extroot,
executable, `#!/bin/sh` / `exec PYTHON -m ocx.entry.web /etc/ocx/NAME.json`
(the node's configuration: Fossil clears an ext program's environment).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..fossil.repository import Repository
from ..node import config as node_config
from ..node.config import NodeConfig
from ..tools.caller import Caller
from ..tools.framework import Answer, Stopped, Tool, run_tool
from ..tools.registry import TOOLS
from .cli_tools import input_from_options, option_kind
from .web_cards import TOKEN_FIELD, allowed, card, whole_page

JSON = "application/json"


@dataclass(frozen=True)
class Node:
    """What the page knows of its node: its configuration and page secret."""

    config: NodeConfig | None
    secret: bytes | None

    @classmethod
    def from_argv(cls, argv: list[str], repository: str | None) -> Node:
        if not argv:
            return cls(None, None)
        config = node_config.load_file(argv[0])
        if repository and Path(config.repository).resolve() != Path(repository).resolve():
            config = None  # a page installed for another repository knows nothing of this one
        try:
            secret = node_config.page_secret_path(argv[0]).read_bytes().strip() or None
        except OSError:
            secret = None
        return cls(config, secret)


def base_url(env: Mapping[str, str]) -> str:
    """This repository's base URL as the viewer reached it: what precedes /ext."""
    script = env.get("SCRIPT_NAME", "")
    root = script[: script.find("/ext")] if "/ext" in script else ""
    return f"{env.get('REQUEST_SCHEME', 'http')}://{env.get('HTTP_HOST', '')}{root}"


def referer_allowed(env: Mapping[str, str]) -> bool:
    referer, base = env.get("HTTP_REFERER", ""), base_url(env)
    return bool(env.get("HTTP_HOST")) and (referer == base or referer.startswith(base + "/"))


def viewer(env: Mapping[str, str]) -> str:
    return env.get("FOSSIL_USER") or "nobody"


def session_of(env: Mapping[str, str]) -> str:
    """The viewer's login cookie, or "" when the viewer has none. Fossil
    names it `fossil-` and the first 16 digits of the login group's code, or
    else the project's (2.21 login.c login_cookie_name)."""
    repository = env.get("FOSSIL_REPOSITORY")
    if not repository:
        return ""
    with Repository(repository) as served:
        name = "fossil-" + (served.config("login-group-code") or served.project_code)[:16]
    for part in env.get("HTTP_COOKIE", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


def token(node: Node, env: Mapping[str, str]) -> str:
    """D43: the viewer's login and session, signed with the node's page secret."""
    if node.secret is None:
        return ""
    signed = f"{viewer(env)}\0{session_of(env)}".encode()
    return hmac.new(node.secret, signed, hashlib.sha256).hexdigest()


def refusal(env: Mapping[str, str], node: Node, given: str) -> str | None:
    """Why a POST may change nothing, or None when it may (D30, D43)."""
    if not referer_allowed(env):
        return "a change is taken only from this repository's own pages (Referer, D30)"
    if node.secret is None:
        return "this node's page has no secret (ocx node init writes it), so it takes no change (D43)"
    if not given or not hmac.compare_digest(given, token(node, env)):
        return "a change is taken only from OCX's own forms: this request has no valid token (D43)"
    return None


def caller(env: Mapping[str, str], node: Node) -> Caller:
    """The viewer as the tools' caller, on the node (tools/caller.py)."""
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


def answer_json(env: Mapping[str, str], node: Node, body: str) -> dict:
    """The CLI's and MCP's door (tools/remote.py)."""
    if env.get("REQUEST_METHOD") != "POST":
        return {"login": viewer(env), "capabilities": env.get("FOSSIL_CAPABILITIES", ""), "token": token(node, env)}
    try:
        call = json.loads(body)
        name, raw, given = call["tool"], call.get("input", {}), call.get("token", "")
    except (ValueError, KeyError, TypeError):
        return _stopped("", "input", 'a call is {"tool": NAME, "input": {...}, "token": TOKEN}').model_dump(mode="json")
    if not isinstance(name, str) or not isinstance(given, str):
        return _stopped(str(name), "input", "tool and token are strings").model_dump(mode="json")
    return run_call(env, node, name, raw, given).model_dump(mode="json")


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


def wants_json(env: Mapping[str, str]) -> bool:
    """A call in JSON (`?json`, or a JSON body): Fossil 2.21 passes an ext
    program no Accept header, so the query says it."""
    query = urllib.parse.parse_qs(env.get("QUERY_STRING", ""), keep_blank_values=True)
    return "json" in query or env.get("CONTENT_TYPE", "").startswith(JSON)


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    length = int(env.get("CONTENT_LENGTH") or 0)
    body = sys.stdin.buffer.read(length).decode("utf-8", "replace") if length else ""
    node = Node.from_argv(argv, env.get("FOSSIL_REPOSITORY"))
    if wants_json(env):
        sys.stdout.write(f"Content-Type: {JSON}\r\n\r\n" + json.dumps(answer_json(env, node, body)))
    else:
        sys.stdout.write("Content-Type: text/html; charset=utf-8\r\n\r\n" + page(env, node, body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
