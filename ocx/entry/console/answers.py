"""A tool's answer (Part 4, D23) as readable steps, its JSON behind a toggle.

The answer arrives as the tool's one shape, `{"tool", "dry_run", "log",
"result", "stopped"}`: first what came of it in one line (wrote what,
would write what, or stopped at which field and why), then each step of
its log, then a result that is an object as its fields. The exact JSON
stays under "The answer as JSON" (its `pre.ocx-answer` is what a script
or a test reads).
"""
from __future__ import annotations

import json
from typing import Any

from .words import esc

KIND_MARKS = {"checked": "✓", "resolved": "→", "read": "·", "would_write": "✎", "wrote": "✔", "stopped": "✘"}
KIND_WORDS = {"checked": "checked", "resolved": "resolved", "read": "read", "would_write": "would write",
              "wrote": "wrote", "stopped": "stopped"}


def _is_hash(value: Any) -> bool:
    return isinstance(value, str) and len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value)


def _headline(answer: dict[str, Any], root: str) -> str:
    stopped = answer.get("stopped")
    if stopped:
        return (f'<p class="ocx-outcome-line ocx-bad">Stopped at <b>{esc(stopped.get("field", "?"))}</b>: '
                f'{esc(stopped.get("why", ""))}</p>')
    result = answer.get("result")
    if answer.get("dry_run"):
        writes = [step["text"] for step in answer.get("log", []) if step.get("kind") == "would_write"]
        said = "; ".join(writes) if writes else "it would write nothing"
        return f'<p class="ocx-outcome-line ocx-good">Dry run, nothing written: would write {esc(said)}.</p>'
    if isinstance(result, str) and _is_hash(result):
        return (f'<p class="ocx-outcome-line ocx-good">Done: wrote <a href="{root}/info/{esc(result)}">'
                f"<code>{esc(result[:12])}</code></a>.</p>")
    return '<p class="ocx-outcome-line ocx-good">Done.</p>'


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "<dl>" + "".join(f"<dt>{esc(k.replace('_', ' '))}</dt><dd>{_value(v)}</dd>"
                                for k, v in value.items()) + "</dl>"
    if isinstance(value, list):
        return ", ".join(_value(v) for v in value) if value else "none"
    if value is None:
        return "—"
    return f"<code>{esc(value)}</code>" if isinstance(value, str) else esc(json.dumps(value))


def answer_view(answer: dict[str, Any], root: str = "") -> str:
    """ROOT: the repository's pages' prefix, for the link to what it wrote."""
    steps = "".join(
        f'<li class="ocx-step ocx-step-{esc(step.get("kind", ""))}"><span class="ocx-mark">'
        f'{KIND_MARKS.get(step.get("kind"), "•")}</span> <span class="ocx-kind">'
        f'{esc(KIND_WORDS.get(step.get("kind"), step.get("kind", "")))}</span>'
        + (f' <span class="ocx-step-field">{esc(step["field"])}</span>' if step.get("field") else "")
        + f' {esc(step.get("text", ""))}</li>'
        for step in answer.get("log", []))
    result = answer.get("result")
    shown = (f'<div class="ocx-result">{_value(result)}</div>' if isinstance(result, dict) else "")
    exact = esc(json.dumps(answer, indent=1))
    return (f'<div class="ocx-answer-view" role="status">{_headline(answer, root)}'
            f'<ol class="ocx-steps">{steps}</ol>{shown}'
            f'<details class="ocx-json"><summary>The answer as JSON</summary>'
            f'<pre class="ocx-answer">{exact}</pre></details></div>')
