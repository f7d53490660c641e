"""Making and adopting a node on its host: `ocx node init`, a node elsewhere, `ocx demo`.

Run by:  the command line, by an admin of the host (`ocx node init NAME`, `ocx node init
         --name NAME --server URL`, `ocx node remove NAME --at-node SRV`, `ocx demo`).
As:      root.
Reads:   the host (accounts, systemd), the repository it serves or joins.
Writes:  the node's configuration (/etc/ocx), its unit files and drop-ins, the Fossil server's
         account, the served repository's hook, ext program and node user.
"""
