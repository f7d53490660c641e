"""What the server's node answers nodes elsewhere (D36-D39).

It runs in the node's web page (ocx/page/web_nodes.py), as the Fossil
server's account, which owns the served repository: the only place that
knows every artifact's sender (F2) and whose letters every login holds, and
the only one allowed to change them (D37). A node elsewhere asks it, as its
own node user, logged in through Fossil: the receipts since one it names
(receipts.py, held open until something arrives, D38), a record's answer, a
runner page as an admin sent it, logins' letters (questions.py), and the
password of a run user it may grant (grants.py). Who is a node elsewhere is
the list of nodes (registry.py); which node a run user works for,
ownership.py.
"""
