"""Executors: what plays a league's games. The writer (harness.league.runner) decides and records.

Two implementations of one interface (:mod:`harness.league.executors.base`): ``local``, worker
processes on this machine (:mod:`harness.league.executors.local`), and ``dask``, batches of
games as tasks on a Dask distributed cluster (:mod:`harness.league.executors.dask`). Both
report ``(kind, seq, payload)`` messages to the one writer, which records each game once.
"""
