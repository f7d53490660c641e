"""OCX's protocol as pure types and functions: no I/O, no clock, no subprocess.

Its names are loaded when first used (PEP 562): the message models build
pydantic schemas when imported, which costs the node's service, the hook,
a run's preparation and the readers their start-up even when they only
find a message's fence or read a verdict (issue 15).
"""
from importlib import import_module

_HOMES = {
    "FieldError": "errors",
    "Envelope": "finder", "envelope": "finder", "find_message": "finder",
    "Budget": "messages", "Message": "messages", "Outcome": "messages", "Record": "messages",
    "Response": "messages", "Restrict": "messages", "Sandbox": "messages", "Stop": "messages",
    "parse_message": "messages",
    "render_message": "render",
    "Judgement": "verdict", "Verdict": "verdict", "VerdictTag": "verdict", "format_verdict": "verdict",
    "parse_verdict": "verdict",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value
