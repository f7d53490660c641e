"""The `ocx` program and `ocx mcp`: what a person, an agent or a run types.

Run by:  `ocx` (pyproject's script: launch.py), a person's or agent's shell anywhere, a run's
         program inside its unit, `ocx mcp` over stdio.
As:      whoever calls it.
Reads:   what its caller may: a repository file, the node's page over HTTP (the tools from
         anywhere), a run's tool socket, the node's configuration on its host.
Writes:  only through a tool (as its caller, D22) and a session's terminal (`ocx attach`).
Imports: the shared layer; of another process only the entry it starts: `ocx node serve` and
         `ocx node check` (ocx/node_service), `ocx node follow` (ocx/follower), `ocx node init`,
         `ocx node remove` and `ocx demo` (ocx/setup), `ocx hook` (ocx/hook). The command then is that process.
"""
