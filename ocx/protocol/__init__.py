"""OCX's protocol as pure types and functions: no I/O, no clock, no subprocess."""
from .errors import FieldError
from .finder import Envelope, envelope, find_message
from .messages import Budget, Message, Outcome, Record, Response, Restrict, Sandbox, Stop, parse_message
from .render import render_message
from .verdict import Judgement, Verdict, VerdictTag, format_verdict, parse_verdict

__all__ = [
    "Budget", "Envelope", "FieldError", "Judgement", "Message", "Outcome", "Record",
    "Response", "Restrict", "Sandbox", "Stop", "Verdict", "VerdictTag", "envelope",
    "find_message", "format_verdict", "parse_message", "parse_verdict", "render_message",
]
