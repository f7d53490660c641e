"""The tool sockets of `no_password` runs and runs without network (C6, D22, D24, D34).

Run by:  ocx-tools@NAME.service (`python -I -m ocx.tool_service.tool_socket NAME`).
As:      root, outside every sandbox.
Reads:   the node's configuration and records' directories (inotify on them), a call's one
         bounded line from the run's socket (its peer checked, SO_PEERCRED).
Writes:  the runs' sockets in their records' directories; each call as the run's user through
         Fossil, with a password only this process holds.
"""
