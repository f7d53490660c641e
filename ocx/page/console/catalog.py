"""The tools as the console's forms need them, derived from their types (D23):

    python -m ocx.page.console.catalog        # rewrites tools.json beside this file

Each tool's name, summary, who may call it, and each input field as a
widget: text, number, an amount with units, a choice, a flag, lines (a
list), an object of such fields, or JSON for what none of these fits. It
comes from the same JSON Schema MCP lists (tools/reference.py reads it
too), so nothing here names a tool. The page reads the written file,
which costs it no pydantic at start-up (the page answers in 200 ms,
docs/console.md, 'Fast'); tests/tools/test_console_catalog.py keeps the file equal to what
this writes.
"""
from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...tools.framework import Tool

PATH = Path(__file__).with_name("tools.json")
HIDDEN = ("dry_run",)  # every tool's: the card's two buttons say it


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in prop:
        target = defs[prop["$ref"].rsplit("/", 1)[-1]]
        return {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    if "allOf" in prop and len(prop["allOf"]) == 1:
        return {**_resolve(prop["allOf"][0], defs), **{k: v for k, v in prop.items() if k != "allOf"}}
    return prop


def _kinds(prop: dict[str, Any], defs: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The non-null alternatives of PROP, and whether null is one."""
    options = prop.get("anyOf", [prop])
    kept = [_resolve(option, defs) for option in options if option.get("type") != "null"]
    return kept, len(kept) < len(options)


def field(name: str, prop: dict[str, Any], required: bool, defs: dict[str, Any]) -> dict[str, Any]:
    prop = _resolve(prop, defs)
    kinds, nullable = _kinds(prop, defs)
    spec: dict[str, Any] = {"name": name, "description": prop.get("description", ""), "required": required}
    if "default" in prop:
        spec["default"] = prop["default"]
    for extra in ("units", "default_now", "contentMediaType"):
        if extra in prop:
            spec[extra] = prop[extra]
    types = {kind.get("type") for kind in kinds}
    only = kinds[0] if len(kinds) == 1 else {}
    if "units" in prop and types <= {"string", "integer"}:
        spec["widget"] = "amount"
    elif "enum" in only:
        spec.update(widget="choice", choices=list(only["enum"]))
    elif types == {"boolean"}:
        spec["widget"] = "flag"
    elif types == {"string"}:
        spec["widget"] = "text"
    elif types == {"integer"}:
        spec["widget"] = "number"
    elif types == {"array"} and only.get("items", {}).get("type") == "string":
        spec["widget"] = "lines"
    elif types == {"object"} and "properties" in only:
        inner = set(only.get("required", []))
        spec.update(widget="object", fields=[field(n, p, n in inner, defs) for n, p in only["properties"].items()])
    else:
        spec["widget"] = "json"
    spec["nullable"] = nullable
    return spec


def tool_entry(tool: Tool) -> dict[str, Any]:
    schema = tool.Input.model_json_schema()
    defs, required = schema.get("$defs", {}), set(schema.get("required", []))
    return {"name": tool.name, "summary": tool.summary,
            "capability": {"letters": tool.capability.letters, "means": tool.capability.means},
            "fields": [field(n, p, n in required, defs) for n, p in schema["properties"].items() if n not in HIDDEN]}


def render() -> str:
    from ...tools.registry import TOOLS

    return json.dumps({"tools": [tool_entry(tool) for tool in TOOLS.values()]}, indent=1) + "\n"


@lru_cache(maxsize=1)
def tools() -> tuple[dict[str, Any], ...]:
    """The written catalog: every tool, in the registry's order."""
    return tuple(json.loads(PATH.read_text())["tools"])


def by_name(name: str) -> dict[str, Any] | None:
    return next((tool for tool in tools() if tool["name"] == name), None)


def main(args: list[str]) -> None:
    path = Path(args[0]) if args else PATH
    path.write_text(render())
    print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
