"""The `ocx` command: a Typer rendering of what OCX can do from a shell."""
from __future__ import annotations

import json
import sys
from typing import Any

import typer

from .. import __version__
from .say import say

app = typer.Typer(help="OCX: humans and AI agents on one Fossil repository, every request, limit and judgement "
                       "on the record.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
message_app = typer.Typer(help="OCX messages (records, stops, responses) as text.", no_args_is_help=True)
app.add_typer(message_app, name="message")


@app.command()
def version() -> None:
    """Print OCX's version and the protocol it speaks."""
    say(f"ocx {__version__} (protocol v1, draft 4.6)")


@message_app.command("check")
def message_check(
    path: str | None = typer.Argument(None, help="A file holding a post's or ticket change's text; - or nothing "
                                                 "for standard input."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
) -> None:
    """Find the message in a text (D7) and check it as a node would (C2, C7, D8).

    Exit 0: a valid message; 1: a message a node would refuse, naming the
    field; 2: the text holds no message.
    """
    from ..protocol import FieldError, find_message, parse_message
    from ..protocol.render import message_object

    text = sys.stdin.read() if path in (None, "-") else open(path, encoding="utf-8").read()
    found = find_message(text)
    answer: dict[str, Any]  # as printed by --json
    if found is None:
        answer = {"message": None, "error": None, "why": "no fenced ```json block with an \"ocx\" key (D7)"}
        code = 2
    else:
        try:
            answer = {"message": message_object(parse_message(found)), "error": None}
            code = 0
        except FieldError as error:
            answer = {"message": None, "error": {"field": error.field, "why": error.why}}
            code = 1
    if as_json:
        say(json.dumps(answer))
    elif code == 0:
        say(f"valid {answer['message']['kind']}: " + json.dumps(answer["message"]))
    elif code == 1:
        say(f"refused: {answer['error']['field']}: {answer['error']['why']}")
    else:
        say(answer["why"])
    raise typer.Exit(code)


node_app = typer.Typer(help="Run this host's node: its service, its check, its set-up.", no_args_is_help=True)
app.add_typer(node_app, name="node")


@node_app.command("serve")
def node_serve(name: str = typer.Argument(..., help="The node's name (its units' instance).")) -> None:
    """The node's root service, started by systemd on a poke or a repository change (D26, D27)."""
    from ..node_service.serve import serve_forever

    serve_forever(name)


@node_app.command("check")
def node_check(name: str = typer.Argument(..., help="The node's name.")) -> None:
    """The deliberate check (D6): answer lost runs, start missed records, then read what arrived."""
    from ..node_service.check import run_check

    counts = run_check(name)
    say(", ".join(f"{key} {value}" for key, value in counts.items()))


from .cli_node import register as _register_node_setup  # noqa: E402  (node init, demo)

_register_node_setup(app, node_app)


@node_app.command("follow")
def node_follow(name: str = typer.Argument(..., help="The node's name.")) -> None:
    """A node elsewhere's follower (D38): one request held open to its server, then pull and poke."""
    from ..follower.follow import follow

    follow(name)


@node_app.command("poke")
def node_poke(name: str = typer.Argument(..., help="The node's name."),
              wait_server: bool = typer.Option(False,
                                               help="First wait until the node's Fossil server answers.")) -> None:
    """Wake the node's service: it answers ended runs and reads what arrived (D26)."""
    from ..node import config as node_config
    from ..node.wake import poke_when_server_answers

    config = node_config.load(name)
    raise typer.Exit(0 if poke_when_server_answers(name, config.url if wait_server else None) else 1)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def hook(repository: str = typer.Argument(..., help="Fossil's %R: the repository that received.")) -> None:
    """Fossil's after-receive hook: hand what arrived to the node and return at once (D5)."""
    from ..hook.after_receive import main as hook_main

    raise typer.Exit(hook_main([repository]))


from .cli_tools import register as _register_tools  # noqa: E402  (the six tools, D23)

_register_tools(app)
from .cli_reading import register as _register_readers  # noqa: E402  (verdicts, queue, activity: V2, D33)

_register_readers(app)

from .cli_attach import register as _register_attach  # noqa: E402  (D32)

_register_attach(app)

from .cli_git import register as _register_git  # noqa: E402  (the way back from git, D50)

_register_git(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
