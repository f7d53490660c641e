"""Well-formed messages to mutate in tests."""
NODE = "6cbe285e95a3a124176569ee9243f2a4e9ecdc20"
RECORD_HASH = "e1aacf61538215" + "0" * 26


def record(**changes) -> dict:
    base = {
        "ocx": 1,
        "kind": "record",
        "node": NODE,
        "user": "claude-91c0de",
        "runner": "claude",
        "objective": "Keep docs/ in step with each check-in on trunk.",
        "checkins": ["trunk"],
        "hears": ["pat"],
        "remote": True,
        "restrict": {"no_password": True, "branch": "docs-sync"},
        "sandbox": {"network": True, "read_only": [], "read_write": []},
        "budget": {"wall": "2h"},
    }
    base.update(changes)
    return base


def ci_record(**changes) -> dict:
    fields = dict(runner="command", command=["python3", "ci.py"], user="ci-dev",
                  checkins=["dev"], hears=[], remote=False, restrict={})
    fields.update(changes)
    return record(**fields)


def stop(**changes) -> dict:
    return {"ocx": 1, "kind": "stop", "node": NODE, "stops": RECORD_HASH, **changes}


def response(**changes) -> dict:
    return {"ocx": 1, "kind": "response", "node": NODE, "answers": RECORD_HASH,
            "outcome": "exited", "note": "exit 0 after 52 seconds", **changes}
