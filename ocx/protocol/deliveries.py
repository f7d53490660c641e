"""What a run is given, as the lines C3 words and D13 frames."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Delivery:
    """One delivery: a kind, the artifact's full hash, the line C3 gives, and its parts."""

    kind: str  # "record" | "checkin" | "post" | "change"
    hash: str
    text: str
    parts: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        """One line of JSON, as the session reads it on standard input (D13)."""
        body = {"ocx": 1, "delivery": self.kind, "hash": self.hash, "text": self.text, **self.parts}
        return json.dumps(body, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def record_delivery(record_hash: str, objective: str) -> Delivery:
    return Delivery("record", record_hash, f"Record {record_hash}: {objective}", {"objective": objective})


def checkin_delivery(checkin_hash: str, branch: str, sender: str) -> Delivery:
    return Delivery("checkin", checkin_hash, f"Check-in {checkin_hash} on {branch} by {sender}",
                    {"branch": branch, "user": sender})


def post_delivery(post_hash: str, sender: str, body: str) -> Delivery:
    return Delivery("post", post_hash, f"Post {post_hash} from {sender}: {body}", {"user": sender, "body": body})


def change_delivery(change_hash: str, ticket: str, sender: str, body: str) -> Delivery:
    return Delivery("change", change_hash, f"Change {change_hash} to {ticket} from {sender}: {body}",
                    {"ticket": ticket, "user": sender, "body": body})
