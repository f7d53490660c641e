"""A node elsewhere (D36-D39): a build machine, a lab board, a GPU box.

It runs the node's own code on a clone of the served repository made over
HTTP as its own node user; what differs is here: where it learns senders
and letters (link.py: the server's node, through its page, D37), how it is
woken (follow.py: one request held open to the server, D38), and that all
it writes goes to the server as its node user. Its set-up is
setup/elsewhere.py.
"""
