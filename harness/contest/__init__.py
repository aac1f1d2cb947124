"""The contest site: teams sign in, upload bots, see their own games and failures; a ladder plays.

A contest lives in one directory (``harness contest init DIR --game G``):

- ``contest.yaml``: the game, table sizes, time controls, runtimes and quotas (:mod:`.config`);
- ``contest.sqlite``: the contest's own tables, teams, sessions, submissions, rate-limit counters
  and the standings summary (:mod:`.db`, the one module with their SQL);
- ``submissions/<id>/``: each upload, unpacked (:mod:`.unpack`) and built (:mod:`.build`);
- ``ladder.yaml`` and ``ladder.sqlite``: the ladder, an ordinary league over every team's current
  version (:mod:`.ladder`), read by the pages (:mod:`.ladder_reads`);
- ``finals/``: the finals' league and report.

The site (:mod:`.app`, :mod:`.pages`) is a Starlette application served by uvicorn. It imports
the league and report stages; nothing imports it but the command line.
"""
