"""The node's web page (D30): the console and its tools (docs/console.md), and the
node's door for `ocx TOOL` and `ocx mcp` called from any host.

An ext program of the node's Fossil server (in its --extroot). Fossil
authenticates the viewer and passes the page its login (FOSSIL_USER,
FOSSIL_CAPABILITIES) and its session cookie; the page runs the tools on the
node, as that login, reading the served repository and the node's
configuration (tools/caller.py), and writes through Fossil in the viewer's
own session, so the viewer is the sender (D21). Three kinds of request:

- GET: the console (console/page.py): what needs the viewer, what runs,
  what ended, a branch's queue, and the tools as cards, each form carrying
  the token; `?part=work` and `?output=RECORD` for its script;
- a form POST from a card: the tool is run, its answer shown in its card;
- JSON (`/ext/ocx?json`): a GET answers the viewer's login and token; a
  POST of `{"tool", "input", "token"}` runs the tool and answers the tool's
  one shape. This is how the CLI and MCP call from anywhere
  (tools/remote.py): the same run, log, result and artifact as on the node.

A change is taken only from a POST whose Referer is under this repository's
base URL, as Fossil checks its own forms (D30), and which carries the token
bound to the viewer's login session by the node's page secret (D43): Fossil
serves a run's checked-in files from the same origin, and their forms have
no token.

This module routes a request; who the viewer is and whether it may change
anything is web_viewer.py's; running the tools is web_tools.py's, imported
only when a request runs one, so a token's GET and the console's start
without pydantic or the tools.

Installed by `ocx node init`: a file `ocx` in the server's --extroot,
executable, which runs the door (page_door.py): it hands each request to
the page service that keeps this module imported (page_service.py,
ocx-page@NAME), or runs `PYTHON -m ocx.page.web /etc/ocx/NAME.json` (the
node's configuration: Fossil clears an ext program's environment) when the
service cannot be reached.
"""
from __future__ import annotations

import json
import os
import sys
import urllib.parse
from collections.abc import Mapping
from typing import Any

from .web_viewer import Node, token, viewer

JSON = "application/json"


def wants_json(env: Mapping[str, str]) -> bool:
    """A call in JSON (`?json`, or a JSON body): Fossil 2.21 passes an ext
    program no Accept header, so the query says it."""
    query = urllib.parse.parse_qs(env.get("QUERY_STRING", ""), keep_blank_values=True)
    return "json" in query or env.get("CONTENT_TYPE", "").startswith(JSON)


def answer_json(env: Mapping[str, str], node: Node, body: str) -> dict[str, Any]:
    """The CLI's and MCP's door (tools/remote.py), and nodes elsewhere's (`node=OP`, web_nodes.py)."""
    query = urllib.parse.parse_qs(env.get("QUERY_STRING", ""), keep_blank_values=True)
    if "node" in query:
        if node.preview is not None:  # nodes elsewhere ask the node's own page, never a preview (D46)
            return {"refused": {"field": "node", "why": f"this is the preview of the staged release "
                                                        f"{node.preview.release}: it answers no node elsewhere"}}
        from .web_nodes import answer

        return answer(env, node, body)
    if env.get("REQUEST_METHOD") != "POST":
        return {"login": viewer(env), "capabilities": env.get("FOSSIL_CAPABILITIES", ""), "token": token(node, env)}
    from .web_tools import answer_call

    return answer_call(env, node, body)


def cgi_answer(argv: list[str], env: Mapping[str, str], raw_body: bytes, node: Node | None = None) -> str:
    """The whole CGI answer (headers and body) to one request: what main writes
    to Fossil, and what the page service (page_service.py) sends its door.
    NODE: the preview's (page/preview.py), whose every answer names the release it previews (D46)."""
    body = raw_body.decode("utf-8", "replace") if raw_body else ""
    node = node or Node.from_argv(argv, env.get("FOSSIL_REPOSITORY"))
    marked = f"X-OCX-Preview: {node.preview.release} {node.preview.checkin}\r\n" if node.preview else ""
    if wants_json(env):
        answered = answer_json(env, node, body)
        if node.preview is not None:
            answered = {**answered, "preview": {"release": node.preview.release, "checkin": node.preview.checkin}}
        return f"{marked}Content-Type: {JSON}\r\n\r\n" + json.dumps(answered)
    from .console.page import respond

    content_type, text = respond(env, node, body)
    return f"{marked}Content-Type: {content_type}\r\n\r\n" + text


def main(argv: list[str]) -> int:
    """The page in this process: run by the door (page_door.py) when the page
    service cannot be reached, and by a Fossil whose ext program names it."""
    env = dict(os.environ)
    length = int(env.get("CONTENT_LENGTH") or 0)
    sys.stdout.write(cgi_answer(argv, env, sys.stdin.buffer.read(length) if length else b""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
