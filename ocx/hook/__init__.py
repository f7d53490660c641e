"""Fossil's after-receive hook (C3, D5, D26): `ocx hook REPOSITORY`.

Run by:  Fossil's backoffice after each receipt (the repository's hook command, which `ocx node
         init` writes: `PYTHON -m ocx.cli.launch hook %R`).
As:      the Fossil server's account (the repository file's owner).
Reads:   the received artifacts on its standard input, the nodes' configurations (/etc/ocx).
Writes:  a poke on the node's socket; nothing else.
"""
