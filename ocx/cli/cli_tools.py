"""The six tools on the command line (D23): each a command rendered from its
input type, with every field an option and the whole input as `--input JSON`.

Nothing here is per tool: a field whose type is a string is taken as
given, a true/false field is a flag pair, and any other (a list, an object,
a number) is taken as JSON.
"""
from __future__ import annotations

import inspect
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import typer

from ..protocol.errors import FieldError
from ..tools.framework import Answer, Tool, input_refused, run_tool, validate_input
from ..tools.registry import TOOLS
from .say import say

# A tool called by name with its raw input, answering Answer's JSON form.
ToolCall = Callable[[str, object], dict[str, Any]]

# Where and as whom; `--at-node`, since `node` is a field of create.
CALLER_OPTIONS = {"login": "login", "password_file": "password_file", "clone": "clone", "at_node": "node", "url": "url"}


def _plain(annotation: Any) -> set[type]:
    """The plain types a field takes: a constrained string is a string, an
    optional one too; a list or a model is itself (taken as JSON)."""
    origin = get_origin(annotation)
    if origin is Literal:
        return {type(choice) for choice in get_args(annotation)}
    if origin is Annotated:
        return _plain(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return set().union(*(_plain(arg) for arg in get_args(annotation))) - {type(None)}
    return {origin or annotation} - {type(None)}


def option_kind(annotation: Any) -> str:
    kinds = _plain(annotation)
    if kinds == {bool}:
        return "flag"
    if kinds <= {str}:
        return "text"
    return "json"


def input_from_options(tool: Tool, given: dict[str, Any], whole: str | None) -> dict[str, Any] | str:
    """The input object: `--input` first, fields given as options over it; a
    JSON field that does not parse is returned as that field's name."""
    raw: dict[str, Any] = {}
    if whole is not None:
        try:
            parsed = json.loads(whole)
        except ValueError:
            return "input"
        if not isinstance(parsed, dict):
            return "input"
        raw = parsed
    for name, info in tool.Input.model_fields.items():
        value = given.get(name)
        if value is None:
            continue
        if option_kind(info.annotation) == "json":
            try:
                value = json.loads(value)
            except ValueError:
                return name
        raw[name] = value
    return raw


def print_answer(answer: Answer, exact: bool) -> None:
    if exact:
        say(json.dumps(answer.model_dump(mode="json")))  # ASCII: every other character a JSON escape
        return
    say(f"{answer.tool}{' (dry run)' if answer.dry_run else ''}:")
    for step in answer.log:
        say(f"  {step.kind:<11} {step.field + ': ' if step.field else ''}{step.text}")
    if answer.stopped is not None:
        say(f"stopped at {answer.stopped.field}: {answer.stopped.why}")
    elif isinstance(answer.result, dict):
        for key, value in answer.result.items():
            say(f"  {key}: {json.dumps(value) if not isinstance(value, str) else value}")
    else:
        say(f"result: {answer.result}")


def through(where: dict[str, Any], *, ask: Callable[[str], str] | None = None) -> ToolCall:
    """How calls are made for WHERE (D22): through the run's tool socket when
    one is given or this is a run that has one; on the node's host with
    `--at-node`; else sent to the node's web page as the caller it names
    (tools/remote.py), ASK giving a password nothing else gave."""
    from ..tools.socket_call import ask as ask_socket
    from ..tools.socket_call import inside_socket

    tool_socket = where.pop("socket", None)
    # Only a socket-served run's unit has the directory mounted (systemd also leaves an
    # empty mount point on the host, which every other unit sees); its socket may come a moment later.
    if tool_socket is None and not any(where.values()) and (inside_socket().exists()
                                                            or os.path.ismount(inside_socket().parent)):
        tool_socket = str(inside_socket())
    if tool_socket is not None:
        return lambda name, raw: ask_socket(tool_socket, name, raw)
    made: list[ToolCall] = []  # the way calls go, made at the first call that passes its input's check

    def call(name: str, raw: object) -> dict[str, Any]:
        try:  # Part 4: the input is checked before anything else happens, the caller's look-up included
            validate_input(TOOLS[name], raw)
        except FieldError as fault:
            # stops at the field, touching nothing
            return input_refused(TOOLS[name], raw, fault).model_dump(mode="json")
        if not made:
            try:
                made.append(_calls_for(where, ask))
            except (ValueError, OSError) as error:
                refused = Answer(tool=name, dry_run=False, log=[], stopped={"field": "caller", "why": str(error)})
                return refused.model_dump(mode="json")
        return made[0](name, raw)

    return call


def _calls_for(where: dict[str, Any], ask: Callable[[str], str] | None) -> ToolCall:
    from ..tools.caller import caller_at_node
    from ..tools.credentials import credentials
    from ..tools.remote import RemoteTools

    node = where.get("node")
    if node is not None:
        # On the node's host: its repository is read where it is (root's, D29).
        login = where.get("login")
        if not login:
            raise ValueError("--at-node needs --login LOGIN (D22)")
        password = None
        if where.get("password_file"):
            password = Path(where["password_file"]).read_text().splitlines()[0]
        elif ask is not None:
            password = ask(f"Fossil password for {login}: ")
        try:
            caller = caller_at_node(node, login, password)
        except FileNotFoundError:
            raise ValueError(f"no node {node!r} on this host (no /etc/ocx/{node}.json)") from None

        def at_node(name: str, raw: object) -> dict[str, Any]:
            with caller:
                return run_tool(TOOLS[name], raw, caller).model_dump(mode="json")

        return at_node
    given = credentials(login=where.get("login"), password_file=where.get("password_file"),
                        clone=where.get("clone"), url=where.get("url"), ask=ask)
    return RemoteTools(given).call


def terminal_password(prompt: str) -> str:
    """Asked on the terminal, never echoed (getpass); only where one is."""
    import getpass

    return getpass.getpass(prompt)


def _where(options: dict[str, Any]) -> dict[str, Any]:
    return {**{v: options.get(k) for k, v in CALLER_OPTIONS.items()}, "socket": options.get("socket")}


def _command(tool: Tool) -> Callable[..., None]:
    def command(**options: Any) -> None:
        raw = input_from_options(tool, options, options.get("input"))
        if isinstance(raw, dict):
            ask = terminal_password if sys.stdin.isatty() and sys.stderr.isatty() else None
            answer = Answer.model_validate(through(_where(options), ask=ask)(tool.name, raw))
        else:
            answer = Answer(tool=tool.name, dry_run=False, log=[], stopped={"field": raw, "why": "is not valid JSON"})
        print_answer(answer, options.get("as_json", False))
        raise typer.Exit(0 if answer.stopped is None else 1)

    parameters = []
    for name, info in tool.Input.model_fields.items():
        flag = "--" + name.replace("_", "-")
        kind = option_kind(info.annotation)
        if kind == "flag":
            option = typer.Option(None, f"{flag}/--no-{name.replace('_', '-')}",
                                  help=info.description or name)
            annotation: object = bool | None
        else:
            option = typer.Option(None, flag,
                                  help=(info.description or name) + (" (JSON)" if kind == "json" else ""))
            annotation = str | None
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option,
                                            annotation=annotation))
    extra = {
        "input": typer.Option(None, "--input", help="The whole input as one JSON object."),
        "as_json": typer.Option(False, "--json", help="Print the answer exactly, as JSON."),
        "login": typer.Option(None, "--login", help="Your Fossil login (D22)."),
        "password_file": typer.Option(None, "--password-file", help="A file whose first line is your password."),
        "clone": typer.Option(None, "--clone",
                              help="Your clone of the node's repository, made over HTTP (fossil clone "
                                   "--save-http-password URL FILE): it names the node and your login."),
        "at_node": typer.Option(None, "--at-node", help="On the node's host: the node's name (reads its repository)."),
        "url": typer.Option(None, "--url",
                            help="The node's Fossil server, e.g. http://node.example:8080 (with --login)."),
        "socket": typer.Option(None, "--socket",
                               help="A run's tool socket (C6; inside a run, found by itself)."),
    }
    for name, option in extra.items():
        annotation = bool if name == "as_json" else str | None
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option,
                                            annotation=annotation))
    command.__dict__["__signature__"] = inspect.Signature(parameters)  # typer reads it (inspect.signature)
    command.__doc__ = f"{tool.summary} Needs: {tool.capability.means}."
    return command


def mcp(login: str | None = typer.Option(None, "--login", help="Your Fossil login (D22)."),
        password_file: str | None = typer.Option(None, "--password-file",
                                                 help="A file whose first line is your password."),
        clone: str | None = typer.Option(None, "--clone", help="Your clone of the node's repository, made over HTTP."),
        at_node: str | None = typer.Option(None, "--at-node", help="On the node's host: the node's name."),
        url: str | None = typer.Option(None, "--url", help="The node's Fossil server (with --login)."),
        socket: str | None = typer.Option(None, "--socket",
                                          help="A run's tool socket (inside a run, found by itself).")) -> None:
    """Serve the six tools over MCP on standard input and output (D23)."""
    from .mcp_server import serve_stdio

    # Never asks for a password: its standard input is the protocol's.
    serve_stdio(through(dict(login=login, password_file=password_file, clone=clone, node=at_node, url=url,
                             socket=socket)))


# A tool whose name is a command group of its own is rendered in it: `ocx release tool` (cli_release.py).
GROUPED = ("release",)


def tool_command(tool: Tool) -> Callable[..., None]:
    """TOOL as a command, for a group that renders it (GROUPED)."""
    return _command(tool)


def register(app: typer.Typer) -> None:
    for tool in TOOLS.values():
        if tool.name not in GROUPED:
            app.command(tool.name)(_command(tool))
    app.command("mcp")(mcp)
