"""A card's form, read back into its tool's input (catalog.py says each field's widget).

Form names: a field's own name, `parent.child` inside an object, and
`name~unit` beside an amount's number. What the person left empty is left
out, so the tool applies its own default; what cannot be read as its
widget says (a number that is not one, JSON that does not parse) stops
here, naming the field, before the tool is asked (Part 4). Everything
else is the tool's to check: a missing required field is its refusal.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...protocol.errors import FieldError
from ...protocol.numerals import whole_number

TOKEN_FIELD = "token"  # the form's token (D43): every form carries it, every POST must
TOOL_FIELD = "tool"
UNIT = "~unit"
EMPTY = object()  # left empty: the tool's default


def _number(name: str, raw: str) -> int:
    try:
        return whole_number(raw.strip(" \t"))
    except ValueError:
        raise FieldError(name, f"{raw.strip()!r} is not a whole number") from None


def value(spec: dict[str, Any], form: Mapping[str, str], name: str) -> Any:
    """SPEC's value in FORM under NAME, or EMPTY."""
    widget = spec["widget"]
    if widget == "object":
        inner = {child["name"]: value(child, form, f"{name}.{child['name']}") for child in spec["fields"]}
        inner = {key: given for key, given in inner.items() if given is not EMPTY}
        return inner or EMPTY
    raw = form.get(name, "")
    if widget == "lines":
        lines = [line.strip() for line in raw.splitlines() if line.strip()]
        return lines or EMPTY
    if not raw.strip():
        return EMPTY
    if widget == "flag":
        if raw not in ("true", "false"):
            raise FieldError(name, f"{raw!r} is not true or false")
        return raw == "true"
    if widget == "number":
        return _number(name, raw)
    if widget == "amount":
        unit = form.get(name + UNIT, "")
        suffixes = [suffix for suffix, _name in spec.get("units", [])]
        if unit not in suffixes:
            raise FieldError(name, f"{unit!r} is not one of its units ({', '.join(map(repr, suffixes))})")
        number = _number(name, raw)
        return number if unit == "" else f"{number}{unit}"
    if widget == "json":
        try:
            return json.loads(raw)
        except ValueError:
            raise FieldError(name, "is not valid JSON") from None
    return raw.strip() if widget == "text" else raw


def tool_input(tool: dict[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    """The input of TOOL (a catalog entry) from a card's form, `dry_run` from its button."""
    given = {spec["name"]: value(spec, form, spec["name"]) for spec in tool["fields"]}
    found = {name: given_value for name, given_value in given.items() if given_value is not EMPTY}
    found["dry_run"] = form.get("dry_run") == "true"
    return found
