"""The JSON objects the node answers with or reads: its page's answers, which a node elsewhere
reads (D37, D38), and what its readers print as JSON. Typed as JSON is, since they cross a
network or a pipe: whoever reads a field checks it."""
from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]
