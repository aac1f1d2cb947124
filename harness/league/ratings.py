"""TrueSkill ratings of bot versions, derived from the stored results in schedule order.

Ratings are applied game by game in canonical schedule order (``games.seq``), so the table is
the same whichever worker finished first. They are kept incrementally in the store: the
``ratings`` table holds mu and sigma over the contiguous prefix of the schedule that is settled
(every game up to ``rated_upto`` is finished or dropped). A finished game behind a pending one
waits; :func:`current_ratings` applies those few in memory on top of the stored prefix, so the
table always covers every finished game and is identical to a full recomputation
(:func:`recompute`), which ``harness table --recompute`` does.

Free-for-all with ties: one team per seat, ``ranks`` the game's ranking (equal ranks are ties),
via ``trueskill.TrueSkill(...).rate`` with the package's default backend.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Iterable

import trueskill

from harness.league.config import RatingParams
from harness.league.store import LeagueStore

__all__ = ["make_env", "advance", "PrefixRater", "recompute", "current_ratings", "apply_game", "conservative", "rate_two"]

Ratings = dict[int, tuple[float, float]]


@functools.lru_cache(maxsize=8)
def make_env(params: RatingParams) -> trueskill.TrueSkill:
    """A TrueSkill environment with ``params`` (default backend: 4-13x faster than scipy's here)."""
    return trueskill.TrueSkill(mu=params.mu, sigma=params.sigma, beta=params.beta, tau=params.tau,
                               draw_probability=params.draw_probability, backend=None)


def conservative(mu: float, sigma: float) -> float:
    """The sort key of the table: mu - 3 sigma."""
    return mu - 3 * sigma


def apply_game(env: trueskill.TrueSkill, ratings: Ratings, seats: list[tuple[int, int]]) -> list[int]:
    """Update ``ratings`` in place with one game's ``[(version_id, rank), ...]``; return the ids touched."""
    ids = [v for v, _ in seats]
    if len(ids) < 2 or len(set(ids)) != len(ids) or any(r is None for _, r in seats):
        return []
    if len(ids) == 2:
        (a, rank_a), (b, rank_b) = seats
        fresh = (env.mu, env.sigma)
        ratings[a], ratings[b] = rate_two(env, ratings.get(a, fresh), ratings.get(b, fresh), rank_a, rank_b)
        return ids
    groups = [(env.create_rating(*ratings[v]) if v in ratings else env.create_rating(),) for v in ids]
    rated = env.rate(groups, ranks=[r for _, r in seats])
    for v, (r,) in zip(ids, rated):
        ratings[v] = (r.mu, r.sigma)
    return ids


@functools.lru_cache(maxsize=8)
def _draw_margin(env: trueskill.TrueSkill) -> float:
    return float(trueskill.calc_draw_margin(env.draw_probability, 2, env))


def rate_two(env: trueskill.TrueSkill, a: tuple[float, float], b: tuple[float, float], rank_a: int,
             rank_b: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """One 2-player game in closed form: the same numbers as ``env.rate`` (to ~1e-12), 40x faster.

    With two players TrueSkill's factor graph has one difference factor and its schedule does one
    effective pass, so the update is the textbook one (Herbrich et al. 2007): c^2 = 2 beta^2 +
    sigma_a^2 + sigma_b^2 (after tau), mu moves by sigma^2 / c * v and sigma^2 shrinks by the
    factor 1 - sigma^2 / c^2 * w, with v and w the environment's own truncated-Gaussian
    functions (win or draw). Measured (bench/scale.py, the writer): the library's ``rate`` costs
    180-260 us a game, most of a writer's time; this costs ~5 us. tests/test_ratings_known.py
    checks it against ``env.rate`` on thousands of random games.
    """
    if rank_b < rank_a:  # the winner first, as the factor graph orders teams
        b2, a2 = rate_two(env, b, a, rank_b, rank_a)
        return a2, b2
    tau2 = env.tau * env.tau
    var_a, var_b = a[1] * a[1] + tau2, b[1] * b[1] + tau2
    c = math.sqrt(2 * env.beta * env.beta + var_a + var_b)
    t, e = (a[0] - b[0]) / c, _draw_margin(env) / c
    if rank_a == rank_b:
        v, w = env.v_draw(t, e), env.w_draw(t, e)
    else:
        v, w = env.v_win(t, e), env.w_win(t, e)
    return ((a[0] + var_a / c * v, math.sqrt(var_a * (1 - var_a / (c * c) * w))),
            (b[0] - var_b / c * v, math.sqrt(var_b * (1 - var_b / (c * c) * w))))


def _params_json(params: RatingParams) -> str:
    """How the store records the parameters its ratings were computed with (meta ``rating_params``)."""
    return json.dumps(dataclasses.asdict(params), sort_keys=True)


def _check_params(store: LeagueStore, params: RatingParams) -> None:
    """Drop stored ratings computed with other parameters (or marked stale): they are rebuilt."""
    wanted = _params_json(params)
    if store.get_meta("rating_params") != wanted or store.get_meta("ratings_stale"):
        store.clear_ratings()
        store.set_meta("rating_params", wanted)


def advance(store: LeagueStore, params: RatingParams) -> int:
    """Apply settled games after ``rated_upto`` to the stored ratings; return how many were applied.

    Runs in the caller's transaction if there is one (the runner records a game and advances
    the ratings in one transaction), else in its own.
    """
    env = make_env(params)
    applied = 0
    with store.transaction():
        _check_params(store, params)
        upto = int(store.get_meta("rated_upto", "0") or 0)
        ratings: Ratings = {}
        loaded: set[int] = set()
        changed: set[int] = set()
        new_upto = upto
        done = False
        batch = 16  # usually the next game is the one just recorded, or pending: read little, then more
        while not done:
            rows = list(store.finished_after(new_upto, limit=batch))
            if not rows:
                break
            need = {v for _, status, seats in rows if status == "done" for v, _ in seats} - loaded
            if need:
                ratings.update(store.load_ratings(sorted(need)))
                loaded |= need
            for seq, status, seats in rows:
                if status == "pending":
                    done = True
                    break
                if status == "done":
                    changed.update(apply_game(env, ratings, seats))
                    applied += 1
                new_upto = seq
            if len(rows) < batch:
                break
            batch = min(batch * 4, 4096)
        if new_upto != upto:
            store.save_ratings({v: ratings[v] for v in changed})
            store.set_meta("rated_upto", str(new_upto))
    return applied


class PrefixRater:
    """The runner's incremental ratings: the rated prefix kept in memory, written through to the store.

    Equivalent to calling :func:`advance` after each recorded game, without re-reading the store:
    per game it checks one meta value, rates the games the new result settles, and writes the
    changed ratings and ``rated_upto``, inside the caller's transaction (the game's own).
    """

    def __init__(self, store: LeagueStore, params: RatingParams) -> None:
        self.store = store
        self.params = params
        self.env = make_env(params)
        self._params_json = _params_json(params)
        self._load()

    def _load(self) -> None:
        advance(self.store, self.params)
        self.upto = int(self.store.get_meta("rated_upto", "0") or 0)
        self.ratings: Ratings = self.store.load_ratings()
        rows = list(self.store.finished_after(self.upto))
        self.order = [seq for seq, _, _ in rows]  # every game after the prefix, in schedule order
        self.games = {seq: (status, seats) for seq, status, seats in rows}
        self.next = 0  # index in self.order of the first game not rated
        self.known = self.order[-1] if self.order else self.upto  # the last game read from the store

    def _catch_up(self, newest: int) -> None:
        """Read the games scheduled after the last one known (an adaptive schedule appends its
        rounds while the runner plays: without them the prefix would never move)."""
        if newest <= self.known:
            return
        for seq, status, seats in self.store.finished_after(self.known):
            self.order.append(seq)
            self.games[seq] = (status, seats)
            self.known = seq

    def _still_pending(self, seq: int) -> bool:
        """Whether the game blocking the prefix is still pending in the store (a schedule may have
        dropped it since it was read: a retired version's games)."""
        status = self.store.game_status(seq)
        if status is None or status == "pending":
            return True
        for got, status, seats in self.store.finished_after(seq - 1, limit=1):
            if got == seq:
                self.games[seq] = (status, seats)
        return False

    def recorded(self, seq: int, seats: list[tuple[int, int]]) -> int:
        """Note game ``seq`` as done with ``[(version_id, rank), ...]``; rate what it settles; return how many."""
        return self.recorded_many([(seq, seats)])

    def recorded_many(self, games: list[tuple[int, list[tuple[int, int]]]]) -> int:
        """Bulk :meth:`recorded`: note many games as done, rate what they settle, write once; return how many."""
        if not games:
            return 0
        # someone else (harness table --recompute) rebuilt the stored ratings: the prefix moved, or
        # it was rebuilt with other parameters (same prefix: only the parameters tell); the reload
        # reads these games from the store
        if (int(self.store.get_meta("rated_upto", "0") or 0) != self.upto
                or self.store.get_meta("rating_params") != self._params_json):
            self._load()
            return 0
        self._catch_up(max(seq for seq, _ in games))
        for seq, seats in games:
            self.games[seq] = ("done", seats)
        changed: set[int] = set()
        applied = 0
        while self.next < len(self.order):
            nxt = self.order[self.next]
            if self.games[nxt][0] == "pending" and self._still_pending(nxt):
                break
            status, game_seats = self.games[nxt]
            if status == "done":
                changed.update(apply_game(self.env, self.ratings, game_seats))
                applied += 1
            self.upto = nxt
            self.next += 1
            del self.games[nxt]  # a run that plays on must not keep every game it rated
        if self.next > 4096:
            del self.order[:self.next]
            self.next = 0
        if applied or changed:
            self.store.save_ratings({v: self.ratings[v] for v in changed})
        self.store.set_meta("rated_upto", str(self.upto))
        return applied


def current_ratings(store: LeagueStore, params: RatingParams) -> tuple[Ratings, int, int]:
    """Ratings over every finished game: (ratings, games in the stored prefix newly applied, tail games).

    Brings the stored prefix up to date first (a write, usually empty), then applies the finished
    games that wait behind a pending one, in order, in memory only.
    """
    applied = advance(store, params)
    env = make_env(params)
    ratings = store.load_ratings()
    upto = int(store.get_meta("rated_upto", "0") or 0)
    tail = 0
    for _seq, status, seats in store.finished_after(upto):
        if status == "done":
            apply_game(env, ratings, seats)
            tail += 1
    return ratings, applied, tail


def recompute(store: LeagueStore, params: RatingParams) -> int:
    """Throw the stored ratings away and rebuild them from the results; return games applied."""
    with store.transaction():
        store.clear_ratings()
        store.set_meta("rating_params", _params_json(params))
        return advance(store, params)


def replay_all(seats_in_order: Iterable[list[tuple[int, int]]], params: RatingParams) -> Ratings:
    """Ratings from scratch over games given in order (for tests and checks)."""
    env = make_env(params)
    ratings: Ratings = {}
    for seats in seats_in_order:
        apply_game(env, ratings, seats)
    return ratings
