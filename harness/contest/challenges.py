"""Challenges: a team asks for N unranked games against chosen teams' current versions.

The versions are fixed when the challenge is asked (the challenger's and each chosen team's
current one); the table has the challenger and the chosen teams (a table size the contest plays),
the seats rotating game by game. The ladder plays pending challenges between its rounds
(:func:`play_challenges`, at most ``CHUNK`` games at a time, oldest challenge first), with the
contest's time controls and limits, into ``contest.sqlite`` only: the games count for no rating,
no standings, no violations list. Stderr goes to ``challenges.logs/`` (the organizer's). A team
may ask ``challenges.per_hour`` of them an hour, each at most ``challenges.max_games`` games; its
page shows each with its results (who finished ahead of whom).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from typing import Any

from harness.contest import db_ops
from harness.contest.config import ContestConfig
from harness.contest.db import ContestDB

__all__ = ["ChallengeRefused", "request_challenge", "play_challenges", "challenges_of", "CHUNK"]

#: the most challenge games played between two ladder rounds
CHUNK = 10


class ChallengeRefused(ValueError):
    """A challenge that cannot be asked; the message says why and what to do."""


def request_challenge(cfg: ContestConfig, db: ContestDB, team_id: int, opponents: list[str], games: int) -> int:
    """Record a challenge of ``team_id`` against ``opponents`` for ``games`` games; its id."""
    policy = cfg.challenges
    team = db.team(team_id)
    if team is None or team.current_submission is None:
        raise ChallengeRefused("you have no current version yet: upload one that passes conformance first")
    names = list(dict.fromkeys(o for o in opponents if o))
    if not names or team.name in names:
        raise ChallengeRefused("choose one or more other teams to challenge")
    if 1 + len(names) not in cfg.players:
        raise ChallengeRefused(f"a table of {1 + len(names)} is not played here (table sizes: "
                               f"{', '.join(map(str, cfg.players))}): choose {min(cfg.players) - 1} to "
                               f"{max(cfg.players) - 1} teams")
    if not 1 <= games <= policy.max_games:
        raise ChallengeRefused(f"games: from 1 to {policy.max_games}")
    seats = [[team.name, team.current_submission]]
    for name in names:
        row = db.team_by_name(name)
        if row is None or row.current_submission is None:
            raise ChallengeRefused(f"{name!r} has no current version to play")
        seats.append([name, row.current_submission])
    cid, wait = db_ops.add_challenge(db, team_id, json.dumps(seats), games, policy.per_hour)
    if cid is None:
        raise ChallengeRefused(f"challenge quota reached: {policy.per_hour} an hour; the next is allowed in {wait} min")
    return cid


def _referee_config(cfg: ContestConfig) -> Any:
    from harness.play.limits import ResourceLimits, TimeControls
    from harness.play.referee import RefereeConfig

    return RefereeConfig(time=TimeControls(**cfg.time), limits=ResourceLimits(**cfg.limits),
                         log_dir=str(cfg.root / "challenges.logs"))


def play_challenges(cfg: ContestConfig, db: ContestDB, max_games: int = CHUNK,
                    echo: Callable[[str], None] | None = None) -> int:
    """Play up to ``max_games`` games of the pending challenges, oldest first; return how many."""
    from harness.games import get_game
    from harness.play.limits import BotSpec
    from harness.play.pool import BotPool
    from harness.play.referee import play_game

    pending = db_ops.pending_challenges(db)
    played = 0
    if not pending:
        return 0
    game = get_game(cfg.game)
    config = _referee_config(cfg)
    with BotPool(config) as pool:
        for ch in pending:
            seats = json.loads(ch.seats)
            specs = []
            for name, sid in seats:
                sub = db.submission(sid)
                runtime = cfg.runtimes.get(sub.runtime) if sub is not None else None
                folder = str(cfg.submissions_dir / str(sid))
                specs.append(BotSpec(name=f"{name}-s{sid}", command=runtime.run if runtime else ("false",),
                                     cwd=folder, sandbox_dir=folder))
            for n in range(ch.played, ch.games):
                if played >= max_games:
                    return played
                shift = n % len(specs)  # the seats rotate
                order = list(range(len(specs)))[shift:] + list(range(len(specs)))[:shift]
                seed = zlib.crc32(f"challenge-{ch.id}-{n}".encode())
                record = play_game(game, dict(cfg.options), seed, f"c{ch.id}-{n}", [specs[i] for i in order],
                                   pool, config)
                _record(db, ch.id, n, [seats[i][0] for i in order], record, n + 1 == ch.games)
                played += 1
            if echo is not None:
                echo(f"challenge {ch.id} of {seats[0][0]} played ({ch.games} games)")
    return played


def _record(db: ContestDB, challenge_id: int, n: int, teams: list[str], record: Any, last: bool) -> None:
    game = db_ops.ChallengeGame(challenge_id, n, json.dumps(teams), json.dumps(record.ranking),
                                json.dumps(record.scores), json.dumps(record.forfeits))
    db_ops.record_challenge_game(db, game, last)


def challenges_of(db: ContestDB, team_id: int, limit: int = 20) -> list[dict[str, Any]]:
    """The team's latest challenges, each with its games and, per opponent, how often the
    challenger finished ahead, behind, level."""
    out = []
    for ch in db_ops.challenges_of_team(db, team_id, limit):
        seats = json.loads(ch.seats)
        me = seats[0][0]
        versus: dict[str, list[int]] = {name: [0, 0, 0] for name, _ in seats[1:]}
        games = []
        for g in db_ops.challenge_games(db, ch.id):
            teams, ranking = json.loads(g.teams), json.loads(g.ranking)
            mine = ranking[teams.index(me)]
            for seat, name in enumerate(teams):
                if name != me:
                    versus[name][0 if mine < ranking[seat] else 1 if mine > ranking[seat] else 2] += 1
            games.append({"n": g.n + 1, "teams": teams, "ranking": ranking, "won": mine == 0})
        out.append({"id": ch.id, "seats": [f"{name}@s{sid}" for name, sid in seats], "games": ch.games,
                    "played": ch.played, "status": ch.status, "versus": versus, "results": games})
    return out
