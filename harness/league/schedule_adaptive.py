"""The adaptive schedule's game source: rounds chosen as results come in, kept in the store, a changing roster.

:class:`AdaptiveSchedule` is a game source for the runner: it owns a
:class:`~harness.league.schedule_matchmaker.Matchmaker` rebuilt from the store (every version in
registration order, every game scheduled, every result), writes each round it chooses to the
store as pending games before any is played, and is told each result. Round r is chosen only
once every game of the rounds up to r - :data:`LAG` is settled, and reads only their results,
so a run killed with ``kill -9`` and started again rebuilds the same state and chooses the same
next round: the pending games stay pending (played once, never twice), the chosen ones are
chosen again. Rounds r - LAG + 1 .. r - 1 play while r is chosen, so the workers never wait for
the writer.

A changing roster: :meth:`AdaptiveSchedule.set_roster` (the runner calls it with the config it
re-reads between rounds). A new version arrives (after every version registered before it) and
plays first; a version that left is no longer chosen, its pending games are dropped, and its
games and rating stay.

Stopping: the ``games`` budget (games scheduled by this schedule), or the ``until`` question,
answered on the same results the choice reads: each adjacent pair of the top ``top`` active
bots, and the last of them against the next, in the fit's order with P(>next) >= confidence.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from harness.league import queries
from harness.league.config import BotEntry, ConfigError, LeagueConfig
from harness.league.game_sources import blocked_by_deal
from harness.league.ratings_fit import TableFit, fit_batches
from harness.league.schedule_matchmaker import Matchmaker, MatchParams, SkillFit, adjacent_confidence
from harness.league.schedule_roundrobin import SEED_LIMIT, StoreRow
from harness.league.store import GameOutcome, LeagueStore
from harness.league.store_pending import PendingGame

__all__ = ["AdaptiveSchedule", "AdaptiveSource", "LAG", "table_confidence", "table_fit_answer", "Answer", "config_roster"]

#: Rounds in flight while the next is chosen (results of the last LAG - 1 rounds are not read).
LAG = 3
#: meta key: the seq before the adaptive schedule's first game (games up to it came from another
#: schedule: they count as results, round -1)
FROM_KEY = "adaptive_from_seq"


@dataclass(frozen=True)
class Answer:
    """The ``until`` question's state: the lowest P(>next) among the pairs it asks about, and which pair."""

    confidence: float
    pair: tuple[int, int] | None
    top: list[int]


def table_confidence(fit: SkillFit, index: dict[int, int], active: Sequence[int], top: int) -> Answer:
    """P(>next) of each adjacent pair of the ``top`` best ``active`` versions and the next one,
    by the table's fit; the lowest of them. (The one function to change when the table's own
    P(>next) comes from another model.)"""
    order = sorted(active, key=lambda v: -fit.mu[index[v]])[: top + 1]
    if len(order) < 2:
        return Answer(0.0, None, order)
    probs = adjacent_confidence(fit, [index[v] for v in order])
    worst = min(range(len(probs)), key=lambda i: probs[i])
    return Answer(probs[worst], (order[worst], order[worst + 1]), order[:top])


def table_fit_answer(fit: TableFit, active: Sequence[int], top: int) -> Answer:
    """The ``until`` question by the table's fit (what decides a stop): P(>next) of each adjacent
    pair of the ``top`` best ``active`` versions in the fit's order, and the last of them against
    the next; the lowest of them. bench/matchmaking.py applies the same function."""
    wanted = set(active)
    order = [v for v in fit.order if v in wanted][: top + 1]
    if len(order) < 2:
        return Answer(0.0, None, order)
    probs = [fit.p_better(a, b) for a, b in zip(order, order[1:])]
    worst = min(range(len(probs)), key=lambda i: probs[i])
    return Answer(probs[worst], (order[worst], order[worst + 1]), order[:top])


#: How an adaptive game's id starts (a round robin's: ``g-``).
ID_PREFIX = "a-"


def _game_id(league: str, seed: int, round_: int, labels: Sequence[str], key: str | None = None) -> str:
    """An adaptive game's id: keyed with the deal secret (``key``), so that no bot can recompute it
    from the league, its round and the labels a leaderboard prints (docs/security.md)."""
    head: list[object] = ["adaptive"] if key is None else ["adaptive", key]
    return ID_PREFIX + hashlib.sha256(json.dumps([*head, league, seed, round_, list(labels)],
                                                 separators=(",", ":")).encode()).hexdigest()[:12]


def _deal_seed(secret: str | None, league: str, seed: int, round_: int, names: Sequence[str]) -> int:
    """A deal's seed: the league's deal secret (kept in the store, never shown to a bot) before the
    public facts, so that knowing the config and the roster tells nothing about a deal
    (docs/security.md); None only for a store made before deal secrets existed. ``names``: the
    versions at the table (``name@version``), or their names under ``deals: per_bot``."""
    head: list[object] = ["adaptive-deal"] if secret is None else ["adaptive-deal", secret]
    digest = hashlib.sha256(json.dumps([*head, league, seed, round_, sorted(names)],
                                       separators=(",", ":")).encode()).digest()
    return int.from_bytes(digest[:8], "big") % SEED_LIMIT


class AdaptiveSchedule:
    """The adaptive schedule of ``config``'s league in ``store`` (bound, its versions registered)."""

    def __init__(self, config: LeagueConfig, store: LeagueStore, version_ids: dict[str, int], *,
                 forever: bool = False) -> None:
        self.config = config
        self.store = store
        self.forever = forever
        self._confirm_after = 0  # the table's fit is asked again only past this many games (see _stop_now)
        self.mm = Matchmaker(config.seed, config.table_sizes, mu=config.rating.mu, sigma=config.rating.sigma,
                             beta=config.rating.beta, params=MatchParams(lag=LAG))
        self.labels: dict[int, str] = {}
        self.names: dict[int, str] = {}
        self.round_of: dict[int, int] = {}  # seq -> round, of the games not settled yet
        self.versions_of: dict[int, tuple[int, ...]] = {}
        self.outstanding: Counter[int] = Counter()  # round -> its games not settled yet
        self.scheduled = 0  # games scheduled by this schedule, not dropped
        self.stop_reason: str | None = None
        self._rebuild(version_ids)

    # -- state from the store ----------------------------------------------------------------

    def _rebuild(self, version_ids: dict[str, int]) -> None:
        store = self.store
        with store.transaction():
            start = store.get_meta(FROM_KEY)
            if start is None:
                start = str(store.last_seq())
                store.set_meta(FROM_KEY, start)
            # the league is (or turns) adaptive: another schedule's pending games give way
            store.drop_pending_outside(ID_PREFIX)
            store.set_meta("plan_fingerprint", "")
        self.start = int(start)
        for row in store.versions():
            self.labels[row.id] = row.label
            self.names[row.id] = row.name
            self.mm.add_bot(row.id)
        self.mm.set_roster(sorted(version_ids.values()))
        self._replay(queries.schedule_arrays(store, ID_PREFIX))
        self._drop_games_of(set(self.mm.ids) - set(self.active))  # versions that left while no run was on

    def _replay(self, log: queries.ScheduleArrays) -> None:
        """The matchmaker's state from the store's games, as arrays: another schedule's finished
        games (and any before :data:`FROM_KEY`) are results of round -1; this schedule's games
        not dropped are scheduled, their results recorded in their rounds, the rest tracked as
        in flight. The same state as replaying the games one by one (tests/test_adaptive_resume.py),
        without a Python step per game: 5-10x faster at 1,000,000 games (bench/resume.py)."""
        if not len(log.seq) or not self.mm.ids:
            return
        index = np.full(max(self.mm.ids) + 1, -1, dtype=np.int64)
        index[self.mm.ids] = np.arange(len(self.mm.ids))
        seats = index[log.versions]  # bot indices, seat after seat, game after game
        starts = np.cumsum(log.players) - log.players  # each game's first seat
        ours = log.tagged & (log.seq > self.start)
        if ours.any():
            self.mm.note_games(seats[np.repeat(ours, log.players)], log.players[ours], int(log.round[ours].max()))
            self.scheduled += int(ours.sum())
        # the finished games round by round (another schedule's: round -1), in schedule order within
        # a round, then by table size: one bulk call each, its temporaries the size of one round
        done = np.flatnonzero(log.done)
        by_round = np.argsort(np.where(ours, log.round, -1)[done], kind="stable")
        done = done[by_round]
        rounds = np.where(ours, log.round, -1)[done]
        bounds = [0, *(np.flatnonzero(np.diff(rounds)) + 1).tolist(), done.size]
        for lo, hi in zip(bounds, bounds[1:]):
            games = done[lo:hi]
            for k in np.unique(log.players[games]).tolist():
                mine = games[log.players[games] == k]
                at = starts[mine][:, None] + np.arange(k)
                self.mm.record_games(int(rounds[lo]), seats[at], log.ranks[at])
        for i in np.flatnonzero(ours & ~log.done).tolist():  # a few rounds' games
            self._track(int(log.seq[i]), int(log.round[i]), log.versions[starts[i]:starts[i] + log.players[i]].tolist())

    def _drop_games_of(self, gone: set[int]) -> None:
        """Drop the pending games of the versions ``gone``; they no longer count as scheduled."""
        dropped = [seq for seq, vs in self.versions_of.items() if gone & set(vs)]
        if not dropped:
            return
        self.store.drop_pending(dropped)
        for seq in dropped:
            vs = self.versions_of[seq]
            self._settle(seq)
            self.mm.unnote_games(vs, 1)
            self.scheduled -= 1

    def _track(self, seq: int, round_: int, versions: Sequence[int]) -> None:
        self.round_of[seq] = round_
        self.versions_of[seq] = tuple(versions)
        self.outstanding[round_] += 1

    def _settle(self, seq: int) -> int | None:
        round_ = self.round_of.pop(seq, None)
        self.versions_of.pop(seq, None)
        if round_ is not None:
            self.outstanding[round_] -= 1
            if not self.outstanding[round_]:
                del self.outstanding[round_]
        return round_

    # -- events from the runner --------------------------------------------------------------

    def recorded(self, seq: int, versions: Sequence[int], ranks: Sequence[int]) -> None:
        """Game ``seq`` is recorded with these ranks."""
        round_ = self._settle(seq)
        if round_ is not None:
            self.mm.record(round_, versions, ranks)

    def set_roster(self, version_ids: dict[str, int]) -> list[str]:
        """The active versions are now ``version_ids`` (label -> id, registered in the store); return
        what changed, one line each. A version that left has its pending games dropped."""
        before = set(self.active)
        for row in self.store.versions():
            if row.id not in self.labels:
                self.labels[row.id] = row.label
                self.names[row.id] = row.name
                self.mm.add_bot(row.id)
        now = set(version_ids.values())
        self.mm.set_roster(sorted(now))
        gone = before - now
        self._drop_games_of(gone)
        return ([f"joined: {self.labels[v]}" for v in sorted(now - before)]
                + [f"left: {self.labels[v]} (its games and rating stay)" for v in sorted(gone)])

    def dropped(self, seq: int) -> None:
        """Game ``seq`` will not be played (the store refused it: no longer pending)."""
        self._settle(seq)

    # -- choosing ------------------------------------------------------------------------------

    @property
    def active(self) -> list[int]:
        return [v for v, on in zip(self.mm.ids, self.mm.active) if on]

    def ready(self) -> bool:
        """Whether the next round may be chosen now: every round up to it - LAG is settled."""
        r = self.mm.rounds
        return not any(k <= r - LAG for k in self.outstanding)

    def in_flight(self) -> int:
        return len(self.round_of)

    def answer(self) -> Answer | None:
        """The ``until`` question on the results the next round would read (None without a question)."""
        spec = self.config.schedule
        if spec.top is None:
            return None
        fit = self.mm.fit(self.mm.rounds)
        return table_confidence(fit, self.mm.index, self.active, spec.top)

    def table_answer(self) -> Answer | None:
        """The ``until`` question answered by the table's own fit (:func:`fit_batches`: the whole
        table's likelihood, intervals robust to the dependence within duplicate sets), over every
        game recorded, read from the store as arrays: the P(>next) that `harness table` shows."""
        spec = self.config.schedule
        if spec.top is None:
            return None
        batches = queries.done_table_batches(self.store)
        if not batches:
            return None
        r = self.config.rating
        return table_fit_answer(fit_batches(batches, mu=r.mu, sigma=r.sigma, beta=r.beta), self.active, spec.top)

    def _stop_now(self) -> str | None:
        spec = self.config.schedule
        if self.forever:
            return None
        if spec.games is not None and self.scheduled + math.factorial(min(self.config.table_sizes)) > spec.games:
            return f"the budget of {spec.games:,} games is played (schedule.games)"
        if spec.top is not None and spec.confidence is not None and len(self.active) > spec.top:
            # The matchmaker's count fit is cheap but its Laplace spread ignores the duplicate sets'
            # dependence (over-confident at 3+ seats): it only says when to ask the table's fit, which
            # decides; asked again once the league has grown by a tenth.
            cheap = self.answer()
            got = None
            if cheap is not None and cheap.pair is not None and cheap.confidence >= spec.confidence \
                    and self.scheduled >= self._confirm_after:
                got = self.table_answer()
                if got is None or got.confidence < spec.confidence:
                    self._confirm_after = int(self.scheduled * 1.1) + 1
            if got is not None and got.pair is not None and got.confidence >= spec.confidence:
                return (f"answered: the top {spec.top} is ordered with confidence >= {spec.confidence:g} (the least "
                        f"sure pair {self.labels[got.pair[0]]} > {self.labels[got.pair[1]]}: P(>next) "
                        f"{got.confidence:.3f}) (schedule.until)")
        return None

    def next_games(self) -> list[PendingGame] | None:
        """Choose the next round and store it as pending games; [] when not ready (wait for results),
        None when the schedule has stopped (:attr:`stop_reason` says why) or has no table to fill."""
        # One BLAS thread for the fits: the workers hold both cores, and OpenBLAS's threads waiting
        # on each other made the 1,000-bot fit 1.0-1.4 s -> 3-15 s (bench/resume.py). Limited here,
        # not through the environment, which unsandboxed bots would inherit.
        with threadpool_limits(limits=1, user_api="blas"):
            return self._next_round()

    def _next_round(self) -> list[PendingGame] | None:
        if self.stop_reason is not None:
            return None
        if not self.ready():
            return []
        reason = self._stop_now()
        if reason is not None:
            self.stop_reason = reason
            return None
        active = self.active
        if len(active) < min(self.config.table_sizes):
            if not self.forever:
                self.stop_reason = (f"{len(active)} active bot(s): a table needs {min(self.config.table_sizes)} "
                                    f"(add bots to the config)")
            return None
        spec = self.config.schedule
        r = self.mm.rounds
        sets = self.mm.plan_round()
        rows: list[StoreRow] = []
        orders: list[tuple[int, ...]] = []
        room = None if self.forever or spec.games is None else spec.games - self.scheduled
        secret = self.store.deal_secret()
        for s in sets:
            k = len(s)
            if room is not None and room < math.factorial(k):
                self.mm.unnote_games(s, math.factorial(k))  # past the budget: not played
                continue
            members = [(self.labels if self.config.deals_per_version else self.names)[v] for v in s]
            seed = _deal_seed(secret, self.config.name, self.config.seed, r, members)
            for seats in itertools.permutations(s):
                gid = _game_id(self.config.name, self.config.seed, r, [self.labels[v] for v in seats], secret)
                rows.append((gid, r, k, seed, json.dumps(list(seats), separators=(",", ":"))))
                orders.append(seats)
            if room is not None:
                room -= math.factorial(k)
        seqs = self.store.add_games(rows)
        self.scheduled += len(rows)
        games = []
        for seq, row, seats in zip(seqs, rows, orders):
            self._track(seq, r, seats)
            games.append(PendingGame(seq, row[0], row[3], r, seats))
        return games


class AdaptiveSource:
    """The adaptive schedule as the runner's game source: rounds handed out as they are chosen,
    the games a killed run left pending first, and the roster polled before each round.

    ``roster()`` returns the league's bots now (a :class:`~harness.league.config.BotEntry` each),
    or None when they did not change; ``harness run`` re-reads its config file when the file
    changed, a contest server reads its own list. ``notify(line)`` hears each change (a bot
    joined or left, a config that could not be read). A roster with a version the workers do
    not know fills :meth:`new_bots`: the runner gives its executor the new bots before it plays
    their games.
    """

    def __init__(self, schedule: AdaptiveSchedule, roster: Callable[[], Sequence[BotEntry] | None] | None = None,
                 notify: Callable[[str], None] | None = None) -> None:
        self.schedule = schedule
        self.roster = roster
        self.notify = notify or (lambda line: None)
        tracked = set(schedule.round_of)
        self.queue: deque[PendingGame] = deque(g for g in schedule.store.pending_games() if g.seq in tracked)
        ids = {label: v for v, label in schedule.labels.items()}
        self.bots: dict[int, BotEntry] = {ids[b.label]: b for b in schedule.config.bots}  # what the workers know
        #: versions that joined and that the executor does not know yet: no game is handed out
        #: until the runner has given them to it (:meth:`bots_given`)
        self.joined: dict[int, BotEntry] = {}

    def total(self) -> int | None:
        """The games this run will play at most: the budget's rest and the games left pending."""
        spec = self.schedule.config.schedule
        if spec.games is None or self.schedule.forever:
            return None
        return max(0, spec.games - self.schedule.scheduled) + self.schedule.in_flight()

    def remaining(self) -> int | None:
        return None

    def next_games(self, n: int) -> list[PendingGame]:
        while len(self.queue) < n:
            if self.roster is not None and self.schedule.ready():
                self._poll_roster()
            if self.joined:
                return []
            got = self.schedule.next_games()
            if not got:
                break
            self.queue.extend(blocked_by_deal(got))  # a round's sets, seat order by seat order (game_sources.py)
        return [self.queue.popleft() for _ in range(min(n, len(self.queue)))]

    def new_bots(self) -> dict[int, BotEntry]:
        return self.joined

    def bots_given(self) -> None:
        self.joined.clear()

    def more_later(self) -> bool:
        """A standing ladder (``forever``) waits for games even when it has none now."""
        return self.schedule.forever

    def stop_reason(self) -> str | None:
        return self.schedule.stop_reason

    def recorded(self, game: PendingGame, outcome: GameOutcome) -> None:
        self.schedule.recorded(game.seq, game.version_ids, outcome.ranking)

    def _poll_roster(self) -> None:
        assert self.roster is not None
        try:
            bots = self.roster()
        except ConfigError as exc:
            self.notify(f"roster unchanged: {exc}")
            return
        if bots is None:
            return
        store = self.schedule.store
        ids = store.register_versions(bots)
        for b in bots:
            if ids[b.label] not in self.bots:
                self.joined[ids[b.label]] = b
            self.bots[ids[b.label]] = b
        for line in self.schedule.set_roster(ids):
            self.notify(line)
        dropped = {seq for seq in (g.seq for g in self.queue) if seq not in self.schedule.round_of}
        if dropped:  # games of a version that left
            self.queue = deque(g for g in self.queue if g.seq not in dropped)


def config_roster(path: str, config: LeagueConfig) -> Callable[[], Sequence[BotEntry] | None]:
    """``roster()`` for :class:`AdaptiveSource` from a config file: its bots when the file changed
    since the last call (a :class:`~harness.league.config.ConfigError` when it cannot be read now;
    its game, seed and schedule must stay those of the running league)."""
    from harness.league.config import load_config

    seen = [_stamp(path)]

    def roster() -> Sequence[BotEntry] | None:
        stamp = _stamp(path)
        if stamp == seen[0]:
            return None
        seen[0] = stamp
        fresh = load_config(path, workers=config.workers)
        for key in ("name", "game", "options", "seed", "table_sizes", "store"):
            if getattr(fresh, key) != getattr(config, key):
                raise ConfigError(f"{path}: {key} changed while the league plays; only bots may change now "
                                  f"(stop the run to change it)")
        return fresh.bots

    return roster


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
