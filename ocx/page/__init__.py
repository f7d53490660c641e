"""The node's web page, /ext/ocx (D30): its door, its service, the console, and what the
server's node answers nodes elsewhere (D36-D39).

Run by:  Fossil's ext program for /ext/ocx (page_door.py, run by its path with `-I -S`), which
         hands each request to ocx-page@NAME.service (page_service.py); web.py when the door
         runs the page itself; for /ext/ocx-next, root's copy of the staged release runs its own
         page in-process as a preview (preview.py, D46), which writes nothing.
As:      the Fossil server's account (D27), never more.
Reads:   the served repository (read-only), the node's configuration, the journal (its group),
         systemd's units' state; the page's secret (D43).
Writes:  through Fossil's web forms as the viewer (a tool's call, D22, D30); nodes elsewhere's
         grants and registrations in the served repository (D37); the page's own join tokens and
         last-heard files beside the repository.
"""
