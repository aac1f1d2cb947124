"""Executors: what plays a league's pending games. The writer (harness.league.runner) decides and records.

``local`` is the runner's own worker processes (harness.league.runner); ``dask`` plays batches of
games as tasks on a Dask distributed cluster (:mod:`harness.league.executors.dask`). Both yield
``(kind, seq, payload)`` messages to the one writer, which records each game once by its row.
"""
