"""A release's build and smoke (D45, D48): the one process of OCX that runs what it builds.

Run by:  ocx-release-build-TOKEN.service, a transient unit root starts for `ocx release stage`
         (node/releases/staging.py), as `python -I -m ocx.release_build.build`.
As:      the build user, ocx-build: no network, a budget, no capability.
Reads:   the inputs root copied for it (wheels; a check-in's tree or the admin's wheel).
Writes:  the releases' staged/ alone (the release, its record, its note). Root reads what it
         leaves as a run's bytes (node/releases).
"""
