"""The base of every error OCX raises, and the refusal that names a field (D8).

Here, at the bottom of the layers, so every layer derives from it without
importing anything: ocx.protocol loads its names lazily (PEP 562), so
`from ocx.protocol.errors import OcxError` loads this file alone, no
pydantic, no I/O (a run's preparation and the stop step import it too).
The family, as docs/architecture.md ("Errors") draws it:

    OcxError
      FieldError            a refusal naming the field (a record's, a tool's input's, a form's)
      fossil.errors.FossilLayerError      what the Fossil layer raises
      systemd.errors.SystemdLayerError    what the systemd layer raises
      ... and the node's, tools' and entry's own, each derived from OcxError

A class that callers also catch by a standard type keeps it as a second
base (ValueError, OSError, ConnectionError, LookupError, RuntimeError).
"""
from __future__ import annotations


class OcxError(Exception):
    """An error OCX raises on purpose, saying what went wrong; never a bug's."""


class FieldError(OcxError, ValueError):
    """A refusal naming the field at fault: a message's field missing,
    mistyped or out of range; a tool's input, or its caller; a form's entry.

    `field` is the path of the field (`budget.wall`, `sandbox.read_only[1]`,
    `caller`), `why` says what is wrong in words the sender can act on. Its
    text, `field: why`, is what a `refused` response's note says (C4, D8)
    and what a tool's `stopped` answer carries (Part 4).
    """

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}" if field else why)
        self.field = field
        self.why = why
