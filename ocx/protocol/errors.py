"""The one error the protocol layer raises: a field at fault and why (D8)."""
from __future__ import annotations


class FieldError(ValueError):
    """A message field is missing, mistyped or out of range.

    `field` is the path of the field (`budget.wall`, `sandbox.read_only[1]`),
    `why` says what is wrong in words a record's sender can act on. Its text,
    `field: why`, is what a `refused` response's note says (C4, D8).
    """

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}" if field else why)
        self.field = field
        self.why = why
