"""Git, behind one package (D49, D50): the only place that starts the `git`
program (program.py). Shared layer: used by the node's service (the mirror it
keeps, D49), the web page's `/ext/git` door and the command line's way back
(`ocx git import`, D50); it imports nothing above the protocol, Fossil and
the node's host paths."""
