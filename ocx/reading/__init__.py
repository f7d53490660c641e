"""Readers of the repository: verdicts and queues (V2, D25, D33), as a library a merge gate can call."""
