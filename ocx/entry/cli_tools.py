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
from collections.abc import Callable
from types import UnionType
from typing import Annotated, Any, Literal, Optional, Union, get_args, get_origin

import typer

from ..protocol.errors import FieldError
from ..tools.framework import Answer, Tool, run_tool, validate_input
from ..tools.registry import TOOLS

# Where and as whom; `--at-node`, since `node` is a field of create.
CALLER_OPTIONS = {"login": "login", "password_file": "password_file", "clone": "clone", "at_node": "node",
                  "repository": "repository", "url": "url"}


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


def input_from_options(tool: Tool, given: dict[str, Any], whole: str | None) -> dict | str:
    """The input object: `--input` first, fields given as options over it; a
    JSON field that does not parse is returned as that field's name."""
    raw: dict = {}
    if whole is not None:
        try:
            raw = json.loads(whole)
        except ValueError:
            return "input"
        if not isinstance(raw, dict):
            return "input"
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
        typer.echo(answer.model_dump_json())
        return
    typer.echo(f"{answer.tool}{' (dry run)' if answer.dry_run else ''}:")
    for step in answer.log:
        typer.echo(f"  {step.kind:<11} {step.field + ': ' if step.field else ''}{step.text}")
    if answer.stopped is not None:
        typer.echo(f"stopped at {answer.stopped.field}: {answer.stopped.why}")
    elif isinstance(answer.result, dict):
        for key, value in answer.result.items():
            typer.echo(f"  {key}: {json.dumps(value) if not isinstance(value, str) else value}")
    else:
        typer.echo(f"result: {answer.result}")


def through(where: dict[str, Any]) -> Callable[[str, object], dict]:
    """How calls are made for WHERE (D22): through the run's tool socket when
    one is given or this is a run that has one, else as the caller it names."""
    from ..tools.caller import caller_for
    from ..tools.tool_socket import ask, inside_socket

    socket_path = where.pop("socket", None)
    # Only a socket-served run's unit has the directory mounted (systemd also leaves an
    # empty mount point on the host, which every other unit sees); its socket may come a moment later.
    if socket_path is None and not any(where.values()) and (inside_socket().exists() or os.path.ismount(inside_socket().parent)):
        socket_path = str(inside_socket())
    if socket_path is not None:
        return lambda name, raw: ask(socket_path, name, raw)

    def call(name: str, raw: object) -> dict:
        try:  # Part 4: the input is checked before anything else happens, the caller's look-up included
            validate_input(TOOLS[name], raw)
        except FieldError:
            return run_tool(TOOLS[name], raw, None).model_dump(mode="json")  # stops at the field, touching nothing
        try:
            caller = caller_for(**where)
        except (ValueError, OSError) as error:
            return Answer(tool=name, dry_run=False, log=[], stopped={"field": "caller", "why": str(error)}).model_dump(mode="json")
        with caller:
            return run_tool(TOOLS[name], raw, caller).model_dump(mode="json")

    return call


def _where(options: dict[str, Any]) -> dict[str, Any]:
    return {**{v: options.get(k) for k, v in CALLER_OPTIONS.items()}, "socket": options.get("socket")}


def _command(tool: Tool):
    def command(**options: Any) -> None:
        raw = input_from_options(tool, options, options.get("input"))
        if isinstance(raw, dict):
            answer = Answer.model_validate(through(_where(options))(tool.name, raw))
        else:
            answer = Answer(tool=tool.name, dry_run=False, log=[], stopped={"field": raw, "why": "is not valid JSON"})
        print_answer(answer, options.get("as_json", False))
        raise typer.Exit(0 if answer.stopped is None else 1)

    parameters = []
    for name, info in tool.Input.model_fields.items():
        flag = "--" + name.replace("_", "-")
        kind = option_kind(info.annotation)
        if kind == "flag":
            option = typer.Option(None, f"{flag}/--no-{name.replace('_', '-')}", help=info.description or name)
            annotation = Optional[bool]
        else:
            option = typer.Option(None, flag, help=(info.description or name) + (" (JSON)" if kind == "json" else ""))
            annotation = Optional[str]
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation))
    extra = {
        "input": typer.Option(None, "--input", help="The whole input as one JSON object."),
        "as_json": typer.Option(False, "--json", help="Print the answer exactly, as JSON."),
        "login": typer.Option(None, "--login", help="Your Fossil login (D22)."),
        "password_file": typer.Option(None, "--password-file", help="A file whose first line is your password."),
        "clone": typer.Option(None, "--clone", help="A clone that saved your password (fossil clone --save-http-password)."),
        "at_node": typer.Option(None, "--at-node", help="On the node's host: the node's name (reads its repository)."),
        "repository": typer.Option(None, "--repository", help="The repository file to read."),
        "url": typer.Option(None, "--url", help="The served repository's URL, to write to."),
        "socket": typer.Option(None, "--socket", help="A run's tool socket (C6; inside a run, found by itself)."),
    }
    for name, option in extra.items():
        annotation = bool if name == "as_json" else Optional[str]
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation))
    command.__signature__ = inspect.Signature(parameters)
    command.__doc__ = f"{tool.summary} Needs: {tool.capability.means}."
    return command


def mcp(login: Optional[str] = typer.Option(None, "--login", help="Your Fossil login (D22)."),
        password_file: Optional[str] = typer.Option(None, "--password-file", help="A file whose first line is your password."),
        clone: Optional[str] = typer.Option(None, "--clone", help="A clone that saved your password."),
        at_node: Optional[str] = typer.Option(None, "--at-node", help="On the node's host: the node's name."),
        repository: Optional[str] = typer.Option(None, "--repository", help="The repository file to read."),
        url: Optional[str] = typer.Option(None, "--url", help="The served repository's URL."),
        socket: Optional[str] = typer.Option(None, "--socket", help="A run's tool socket (inside a run, found by itself).")) -> None:
    """Serve the six tools over MCP on standard input and output (D23)."""
    from .mcp_server import serve_stdio

    serve_stdio(through(dict(login=login, password_file=password_file, clone=clone, node=at_node,
                             repository=repository, url=url, socket=socket)))


def register(app: typer.Typer) -> None:
    for tool in TOOLS.values():
        app.command(tool.name)(_command(tool))
    app.command("mcp")(mcp)
