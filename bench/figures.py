"""The node benchmark's figures, noted as its parts print them, and printed last as one table
beside what they were before the work on speed and its targets (docs/node.md, "Measured").

"Before" is what was measured on this repository with main's code of 2026-12-03,
before that work (and, where nothing was measured there, the first node's figures on
an empty repository, which say so). Nothing here measures: bench/inside_real.py does.
"""
from __future__ import annotations

NOW: dict[str, str] = {}

# (key, figure, before, target)
ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("first_pass", "the node's first pass after `ocx node init --repository`", "190 s", "≤ 2 s"),
    ("queue", "`ocx queue main` (the newest 50 of 1,158 check-ins)", "61–81 s", "≤ 300 ms"),
    ("verdicts", "`ocx verdicts CHECKIN`", "0.3 s, reading every tag change", "≤ 300 ms"),
    ("activity", "`ocx activity`", "0.3 s, reading every post", "≤ 300 ms"),
    ("quiet_unit", "one session record on a quiet node: receipt to its unit's start", "0.41 s", ""),
    ("quiet_start", "the same: receipt to the program's start (ExecMainStart)", "median 2.48 s", "≤ 300 ms"),
    ("quiet_line", "the same: receipt to the program's first line", "—", ""),
    ("command_start", "a command record's check-in on a quiet node: receipt to ExecMainStart", "— (not measured)",
     "≤ 300 ms"),
    ("hook", "`ocx hook` given 100 lines, start to exit", "median 20–23 ms (empty repository)", "≤ 300 ms (the first node's target)"),
    ("ends", "a unit's end to its response in the repository (20 records)", "median 93–117 ms (empty repository)",
     "median ≤ 500 ms (the first node's target)"),
    ("deliveries", "200 posts into a live session's thread: receipt to its delivery on stdin",
     "median 9–10 ms (empty repository)", "median ≤ 300 ms (the deliveries' target)"),
    ("ci_gap", "a command record given 50 check-ins at once: one run's end to the next one's start",
     "median 10–11 ms (empty repository)", "≤ 1 s (the deliveries' target)"),
    ("spares", "before the burst: runs' homes made ahead by the idle node (`spare_homes`)", "— (one, or none)",
     ""),
    ("burst_unit", "a burst of session records: receipt to the unit's start",
     "burst of 100, empty repository: median 154 ms", ""),
    ("burst_start", "the same burst: receipt to the program's start (ExecMainStart)",
     "burst of 30: median 31.1 s, max 33.0 s; of 100 on an empty repository: median 9.5 s",
     "burst of 100: median ≤ 2 s, p99 ≤ 4 s"),
    ("burst_line", "the same burst: receipt to the program's first line", "—", ""),
    ("burst_cpu", "the same burst: CPU used from its first post to its last program's start", "—", ""),
    ("burst_parts", "the same burst: a run's own CPU, part by part (its unit's cgroup, a median run)", "—", ""),
    ("burst_order", "the same burst: programs started out of the order their records were received", "—",
     "none"),
    ("memory", "the node service while the next burst's runs start (MemoryCurrent)",
     "34–36 MiB (empty repository; it exited when idle)", "no OCX process per run (the first node's target)"),
    ("units", "units active at once", "203 of 200 (empty repository)", ""),
    ("mark_lost", "a pass with the node's mark lost (D2), over all of the above", "190 s (its first pass)",
     "≤ 2 s, nothing old acted on twice"),
)


def note(key: str, text: str) -> None:
    """KEY's figure; a second one (the readers after the burst) is added to the first."""
    NOW[key] = f"{NOW[key]}; then {text}" if key in NOW else text


def table() -> str:
    lines = ["| figure | before | now | target |", "| --- | --- | --- | --- |"]
    lines += [f"| {figure} | {before} | {NOW[key]} | {target} |" for key, figure, before, target in ROWS if key in NOW]
    return "\n".join(lines)
