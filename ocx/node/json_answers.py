"""The JSON objects the server's node's page answers with and a node elsewhere reads (D37, D38):
typed as JSON is, since they cross the network; whoever reads a field checks it."""
from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]
