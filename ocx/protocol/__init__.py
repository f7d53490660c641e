"""OCX's protocol as pure types and functions: no I/O, no clock, no subprocess.

Its names are loaded when first used (PEP 562): the message models build
pydantic schemas when imported, which costs the node's service, the hook,
a run's preparation and the readers their start-up even when they only
find a message's fence or read a verdict (docs/node.md, 'The readers').
"""
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the checker sees the names themselves; Python loads them when used
    from .errors import FieldError as FieldError
    from .errors import OcxError as OcxError
    from .finder import Envelope as Envelope
    from .finder import envelope as envelope
    from .finder import find_message as find_message
    from .messages import Budget as Budget
    from .messages import Message as Message
    from .messages import Outcome as Outcome
    from .messages import Record as Record
    from .messages import Response as Response
    from .messages import Restrict as Restrict
    from .messages import Sandbox as Sandbox
    from .messages import Stop as Stop
    from .messages import parse_message as parse_message
    from .render import render_message as render_message
    from .verdict import Judgement as Judgement
    from .verdict import Verdict as Verdict
    from .verdict import VerdictTag as VerdictTag
    from .verdict import format_verdict as format_verdict
    from .verdict import parse_verdict as parse_verdict

_HOMES = {
    "FieldError": "errors", "OcxError": "errors",
    "Envelope": "finder", "envelope": "finder", "find_message": "finder",
    "Budget": "messages", "Message": "messages", "Outcome": "messages", "Record": "messages",
    "Response": "messages", "Restrict": "messages", "Sandbox": "messages", "Stop": "messages",
    "parse_message": "messages",
    "render_message": "render",
    "Judgement": "verdict", "Verdict": "verdict", "VerdictTag": "verdict", "format_verdict": "verdict",
    "parse_verdict": "verdict",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value
