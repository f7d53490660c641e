"""The six tools of Part 4, and `release` (D46), by name: every way in renders this table (D23)."""
from __future__ import annotations

from .audit import AuditTool
from .create import Create
from .framework import Tool
from .post import PostTool
from .push import PushTool
from .release import ReleaseTool
from .status import StatusTool
from .stop import StopTool

TOOLS: dict[str, Tool] = {tool.name: tool
                          for tool in (Create(), StopTool(), PostTool(), AuditTool(), PushTool(), StatusTool(),
                                            ReleaseTool())}
