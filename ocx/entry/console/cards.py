"""Each tool a card, drawn from the catalog (catalog.py, D23): nothing here names a tool.

A card shows the tool's summary and who may use it, and, where the viewer
holds that (no form that would only be refused: the earlier OCX's decision 35), its form: each field
labelled, required ones marked, the default written out (a default known
only now, such as this node or the admins who would hear, read from the
repository), lists as one entry a line, objects as their own fields, an
amount as a number and a unit. After a POST the card holds what was sent
and shows the answer (answers.py). Every value is escaped (words.esc).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .answers import answer_view
from .forms import TOKEN_FIELD, TOOL_FIELD, UNIT
from .words import esc

LINES_HINT = "one a line"
WIDE_FIELDS = 8


def _count(fields: list[dict[str, Any]]) -> int:
    return sum(_count(f["fields"]) if f["widget"] == "object" else 1 for f in fields)


@dataclass(frozen=True)
class Defaults:
    """Defaults the tools decide when they run, written out for the form (`default_now`)."""

    values: Mapping[str, str] = field(default_factory=dict)  # default_now name -> as shown

    def shown(self, spec: dict[str, Any]) -> str | None:
        return self.values.get(spec.get("default_now", ""))


def allowed(tool: dict[str, Any], capabilities: frozenset[str]) -> bool:
    letters = tool["capability"]["letters"]
    return not letters or bool(set(letters) & capabilities)


def _default_text(spec: dict[str, Any], defaults: Defaults) -> str:
    now = defaults.shown(spec)
    if now is not None:
        return now
    if "default" not in spec or spec["widget"] == "object":
        return ""
    value = spec["default"]
    if value is None:
        return ""
    if value == []:
        return "none"
    return value if isinstance(value, str) else json.dumps(value)


def _help(spec: dict[str, Any], defaults: Defaults) -> str:
    default = _default_text(spec, defaults)
    said = f" Default: <span class=\"ocx-default\">{esc(default)}</span>." if default else ""
    return f'<small class="ocx-help">{esc(spec["description"])}{said}</small>'


def _id(tool: str, name: str) -> str:
    return f"f-{tool}-{name}".replace(".", "-").replace("~", "-")


def _options(choices: list[tuple[str, str]], chosen: str) -> str:
    return "".join(f'<option value="{esc(value)}"{" selected" if value == chosen else ""}>{esc(label)}</option>'
                   for value, label in choices)


def _control(tool: str, spec: dict[str, Any], name: str, given: Mapping[str, str], defaults: Defaults,
             required: bool) -> str:
    widget, shown = spec["widget"], given.get(name, "")
    ident = f'id="{_id(tool, name)}" name="{esc(name)}"' + (" required" if required else "")
    hint = _default_text(spec, defaults)
    placeholder = f' placeholder="{esc(hint)}"' if hint and hint != "none" else ""
    if widget == "flag":
        default = "default" + (f" ({hint})" if hint else "")
        return f"<select {ident}>{_options([('', default), ('true', 'true'), ('false', 'false')], shown)}</select>"
    if widget == "choice":
        first = [] if required else [("", "default" + (f" ({hint})" if hint else ""))]
        return f"<select {ident}>{_options(first + [(c, c) for c in spec['choices']], shown)}</select>"
    if widget == "amount":
        units = [(suffix, label) for suffix, label in spec["units"]]
        unit = given.get(name + UNIT, units[0][0])
        return (f'<span class="ocx-amount"><input type="number" min="1" step="1" inputmode="numeric" {ident}'
                f' value="{esc(shown)}"><select name="{esc(name + UNIT)}" aria-label="{esc(spec["name"])} unit">'
                f"{_options(units, unit)}</select></span>")
    if widget == "number":
        return f'<input type="number" min="1" step="1" inputmode="numeric" {ident} value="{esc(shown)}">'
    if widget == "lines":
        lines = hint.replace(", ", "\n") if spec.get("default_now") else LINES_HINT
        return f'<textarea rows="2" {ident} placeholder="{esc(lines)}">{esc(shown)}</textarea>'
    if widget == "json" or spec.get("contentMediaType"):
        return f'<textarea rows="3" {ident}{placeholder}>{esc(shown)}</textarea>'
    return f'<input type="text" {ident} value="{esc(shown)}"{placeholder}>'


def _field(tool: str, spec: dict[str, Any], given: Mapping[str, str], defaults: Defaults, prefix: str = "",
           parent_required: bool = True) -> str:
    name = prefix + spec["name"]
    required = spec["required"] and parent_required
    mark = ' <abbr class="ocx-required" title="required">*</abbr>' if spec["required"] else ""
    label = esc(spec["name"].replace("_", " "))
    if spec["widget"] == "object":
        inner = "".join(_field(tool, child, given, defaults, name + ".", required) for child in spec["fields"])
        return (f'<fieldset class="ocx-object"><legend>{label}{mark}</legend>{_help(spec, defaults)}'
                f"{inner}</fieldset>")
    control = _control(tool, spec, name, given, defaults, required)
    return (f'<div class="ocx-field{" ocx-req" if spec["required"] else ""}">'
            f'<label for="{_id(tool, name)}">{label}{mark}</label>{control}{_help(spec, defaults)}</div>')


def card(tool: dict[str, Any], capabilities: frozenset[str], action: str, token: str, defaults: Defaults,
         given: Mapping[str, str] | None = None, answer: dict[str, Any] | None = None, root: str = "") -> str:
    name, means = tool["name"], tool["capability"]["means"]
    may = allowed(tool, capabilities)
    wide = " ocx-wide" if _count(tool["fields"]) > WIDE_FIELDS else ""  # its fields side by side
    parts = [f'<div class="ocx-card{wide}" id="tool-{esc(name)}"><h3>{esc(name)} ',
             f'<span class="ocx-needs {"ocx-held" if may else "ocx-missing"}" title="who may use it">'
             f'{esc(means)}</span>'
             f'</h3><p class="ocx-summary">{esc(tool["summary"])}</p>']
    if may:
        fields = "".join(_field(name, spec, given or {}, defaults) for spec in tool["fields"])
        required = any(spec["required"] for spec in tool["fields"])
        parts.append(
            f'<form method="POST" action="{esc(action)}#tool-{esc(name)}" class="ocx-form">'
            f'<input type="hidden" name="{TOOL_FIELD}" value="{esc(name)}">'
            f'<input type="hidden" name="{TOKEN_FIELD}" value="{esc(token)}">{fields}'
            + ('<p class="ocx-legend"><abbr class="ocx-required">*</abbr> required</p>' if required else "")
            + '<div class="ocx-buttons"><button name="dry_run" value="true">Dry run</button> '
              '<button name="dry_run" value="false" class="ocx-primary">Run</button></div></form>')
    else:
        parts.append(f'<p class="ocx-absent"><em>You may not use it here: it needs {esc(means)}.</em></p>')
    if answer is not None:
        parts.append(answer_view(answer, root))
    return "".join(parts) + "</div>"
