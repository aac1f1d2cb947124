"""The participant features' own tables in ``contest.sqlite``: one migration step, applied by
:class:`~harness.contest.db.ContestDB` after the contest's base schema and the organizer's steps
(:mod:`.migrations`; ``CREATE ... IF NOT EXISTS``: a contest created before them gains them when the site or the ladder next starts).

- ``pauses``: a current version taken out of the ladder by the auto-pause (:mod:`.autopause`):
  when, why (one line for its team), and its games, forfeits and violations at that moment.
- ``challenges`` and ``challenge_games``: a team's request for unranked games against chosen
  teams' current versions (fixed when asked), and each game played (:mod:`.challenges`).
"""

from __future__ import annotations

__all__ = ["PARTICIPANT_SCHEMA"]

PARTICIPANT_SCHEMA = """
CREATE TABLE IF NOT EXISTS pauses (
    submission_id INTEGER PRIMARY KEY REFERENCES submissions(id),
    team_id INTEGER NOT NULL REFERENCES teams(id),
    paused_at REAL NOT NULL,
    reason TEXT NOT NULL,
    games INTEGER NOT NULL,
    forfeits INTEGER NOT NULL,
    violations INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS pauses_team ON pauses (team_id, paused_at);
CREATE TABLE IF NOT EXISTS challenges (
    id INTEGER PRIMARY KEY,
    team_id INTEGER NOT NULL REFERENCES teams(id),
    seats TEXT NOT NULL,            -- JSON [[team, submission id], ...]: the challenger first
    games INTEGER NOT NULL,
    played INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,           -- pending | done
    created_at REAL NOT NULL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS challenges_team ON challenges (team_id, created_at);
CREATE INDEX IF NOT EXISTS challenges_status ON challenges (status, id);
CREATE TABLE IF NOT EXISTS challenge_games (
    challenge_id INTEGER NOT NULL REFERENCES challenges(id),
    n INTEGER NOT NULL,
    teams TEXT NOT NULL,            -- JSON team names by seat
    ranking TEXT NOT NULL,          -- JSON rank by seat (0 = first)
    scores TEXT NOT NULL,
    forfeits TEXT NOT NULL,
    PRIMARY KEY (challenge_id, n)
) WITHOUT ROWID;
"""

