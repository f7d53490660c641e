"""The follower of a node elsewhere (D36-D39): a build machine, a lab board, a GPU box.

Run by:  ocx-follow@NAME.service (`ocx node follow NAME`); the server's own node has none.
As:      root.
Reads:   the node's configuration and its session with the server (as its node user).
Writes:  its clone of the served repository (a pull), a poke on the node's socket; it starts
         ocx-check@NAME when it regains its server.

A node elsewhere runs the node's own code on a clone of the served repository made over HTTP
as its own node user; what differs: where it learns senders and letters (ocx/node/server_link.py:
the server's node, through its page, D37), how it is woken (follow.py: one request held open
to the server, D38), and that all it writes goes to the server as its node user. Its set-up is
ocx/setup/elsewhere.py.
"""
