"""A node's releases (D45-D48): immutable copies of OCX, each named by the
check-in it was built from and the digest of its files, and three links that
say which one serves (`current`), where a roll-back goes (`previous`) and what
was staged to be accepted (`next`).

Shared layer: the node's service, its page and the command line on the node
read it; only root writes the releases' root (`accept`, `rollback`,
`recover`), and the build's unprivileged user writes only under `staged/`
(D48), so everything read from there is read as a hostile run's bytes
(D41): never a link followed, never more than a bound read (tree.py).

    ROOT/                 root's: 0755, every file root's
      staged/             the build user's: releases built and smoked there
        ID/               a staged release's files
        ID.json           what the build recorded: check-in, digest, smoke
      ID/                 an accepted release, copied out of staged/ by root
      current -> ID       what the node's own services run
      previous -> ID      where a roll-back goes
      next -> staged/ID   what `accept` would take
      moving.json         a move of the links in progress (links.py)
"""
