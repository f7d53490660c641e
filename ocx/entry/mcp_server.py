"""The six tools as an MCP server over stdio (`ocx mcp`), with the official
SDK (D23): tools/list is the tools' own input types as JSON Schema, and a
call answers the same envelope the command line prints with --json."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
from mcp import types
from mcp.server import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from ..tools.registry import TOOLS


def listed_tools() -> list[types.Tool]:
    return [types.Tool(name=tool.name, description=f"{tool.summary} Needs: {tool.capability.means}.",
                       input_schema=tool.Input.model_json_schema()) for tool in TOOLS.values()]


def make_server(call: Callable[[str, object], dict[str, Any]]) -> Server:
    """CALL runs a tool by name on an input and gives its answer (cli_tools.through)."""

    async def list_tools(_context: ServerRequestContext[Any],
                         _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed_tools())

    async def call_tool(_context: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            answer = {"tool": params.name, "dry_run": False, "log": [], "result": None,
                      "stopped": {"field": "tool", "why": f"{params.name!r} is not one of {', '.join(TOOLS)}"}}
        else:
            # Tools block (HTTP, fossil): off the event loop.
            answer = await anyio.to_thread.run_sync(call, tool.name, params.arguments or {})
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(answer))],
                                    structured_content=answer, is_error=answer["stopped"] is not None)

    return Server("ocx", on_list_tools=list_tools, on_call_tool=call_tool)


def serve_stdio(call: Callable[[str, object], dict[str, Any]]) -> None:
    server = make_server(call)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
