"""A small agent for the tools' node tests: not a stand-in for OCX. It
reads deliveries (D13) and calls OCX's tools through MCP (`ocx mcp`, with
the SDK's own client) from inside its sandbox, printing each answer as
`tool NAME JSON` for the test to read in the unit's journal.

Objectives: `review HASH` (audit HASH, then answer every post it hears),
`fix` (commit on branch fixes and push; then on trunk and push again),
`own-audit` (commit on branch own-audit with another's name in its U card,
push, then audit that check-in of its own, which D25 refuses); each
then scans what it can read for passwords (report_scan), unless its
objective ends with `noscan` (a long walk that a test of other things
need not wait for)."""
import asyncio
import json
import os
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

OCX = StdioServerParameters(command=sys.executable, args=["-m", "ocx.entry.launch", "mcp"])


async def call(session, name, arguments):
    result = await session.call_tool(name, arguments)
    answer = json.loads(result.content[0].text)
    print(f"tool {name} {json.dumps(answer)}", flush=True)
    return answer


def fossil(*args):
    checkout = os.path.join(os.environ["HOME"], "checkout")
    done = subprocess.run(["fossil", *args], cwd=checkout, capture_output=True, text=True)
    print(f"fossil {' '.join(args)} -> {done.returncode} {done.stdout.strip()[-200:]} {done.stderr.strip()[-200:]}", flush=True)


def commit(name, branch=None, user=None):
    with open(os.path.join(os.environ["HOME"], "checkout", name), "w") as out:
        out.write(f"{name}\n")
    fossil("add", name)
    fossil("commit", "-m", f"{name} by the fixer", "--no-warnings", *(["--branch", branch] if branch else []),
           *(["--user-override", user] if user else []))


SKIP = ("/proc", "/sys", "/dev", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/boot")


def hex_tokens() -> dict:
    """Every 32-hex-digit token in the environment and in every file this run can read
    (a password OCX makes is 32 hex digits), obscured sync passwords decoded too."""
    import re
    from ocx.fossil.clone_facts import unobscure

    token, obscured = re.compile(rb"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"), re.compile(rb"(?<![0-9a-f])[0-9a-f]{66}(?![0-9a-f])")
    found, files = set(), 0
    for value in os.environ.values():
        found.update(t.decode() for t in token.findall(value.encode()))
    for top, dirs, names in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in SKIP]
        for name in names:
            path = os.path.join(top, name)
            try:
                if not os.path.isfile(path) or os.path.getsize(path) > 5_000_000:
                    continue
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            files += 1
            found.update(t.decode() for t in token.findall(data))
            for text in obscured.findall(data):
                try:
                    found.add(unobscure(text.decode()))
                except Exception:
                    pass
    return {"files": files, "tokens": sorted(found)}


def report_scan() -> None:
    scan = hex_tokens()
    for start in range(0, len(scan["tokens"]), 400):  # journald splits lines past 48 KiB
        print("scan-tokens " + json.dumps(scan["tokens"][start:start + 400]), flush=True)
    print("scan " + json.dumps({"files": scan["files"], "tokens": len(scan["tokens"])}), flush=True)


async def main():
    first = json.loads(sys.stdin.readline())
    print("delivery " + json.dumps(first), flush=True)
    objective, record = first.get("objective", ""), first.get("hash")
    scan = report_scan if not objective.endswith("noscan") else (lambda: None)
    loop = asyncio.get_running_loop()
    async with stdio_client(OCX) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            print("listed " + json.dumps(sorted(t.name for t in (await session.list_tools()).tools)), flush=True)
            await call(session, "status", {})
            if objective.startswith("review "):
                await call(session, "audit", {"checkin": objective.split()[1], "verdict": "pass",
                                              "reason": "reads well", "against": record})
                scan()  # the control: a run that holds its password finds it
            elif objective.split()[:1] == ["fix"]:
                commit("fix.txt", "fixes")
                await call(session, "push", {})
                fossil("update", "trunk")
                commit("stray.txt")
                await call(session, "push", {})
                scan()
            elif objective.split()[:1] == ["own-audit"]:
                commit("own.txt", "own-audit", user="admin")  # any U card: the server knows who sent it
                pushed = await call(session, "push", {})
                await call(session, "audit", {"checkin": pushed["result"], "verdict": "pass",
                                              "reason": "mine is fine", "against": "own.txt"})
            while True:
                line = await loop.run_in_executor(None, sys.stdin.readline)
                if not line:
                    return
                delivery = json.loads(line)
                print("delivery " + json.dumps(delivery), flush=True)
                if delivery.get("delivery") == "post" or delivery.get("text", "").startswith("Post "):
                    await call(session, "post", {"to": delivery["hash"], "text": "answer: it reads well"})


if __name__ == "__main__":
    asyncio.run(main())
