"""The referee: plays one game between bot processes, enforcing the protocol, deadlines and legality.

Game-agnostic: it uses only the :mod:`harness.games` API. It referees one game; the bot processes
come from a :class:`~harness.play.pool.BotPool` (:mod:`harness.play.pool`) and go back to it. The
policy for a misbehaving bot lives here, around the pure engine (PettingZoo-style): a violation is
recorded with everything needed to reproduce it, and then either the seat forfeits (default; the
offender is ranked last, its seat played to the end by a seeded uniform-random fallback, its process
killed and restarted for its next game) or, with ``strikes: N``, the first N violations of a seat in
a game only cost it that decision (the fallback plays it) and the game goes on.

The hot path per decision is: legal_actions, observation, one orjson encode, one non-blocking
write, one poll+read, one orjson decode, a list lookup, apply. The state snapshot is taken only
when a violation happens; the state is left untouched until an answer has been validated.
"""

from __future__ import annotations

import random
import select
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import orjson

from harness.games.base import Action, Game, State
from harness.play import protocol
from harness.play.botproc import CRASH, OK, OVERSIZE, TIMEOUT, BotProcess
from harness.play.explain import explain_illegal
from harness.play.game_log import LogEntry, Received
from harness.play.limits import BotSpec, ResourceLimits, TimeControls, check_sandbox
from harness.play.pool import BotPool, PoolKey
from harness.play.startup_output import rest_of_output
from harness.play.violations import KILLING_KINDS, DecisionCost, Violation, ViolationKind

__all__ = ["RefereeConfig", "FairPlay", "FAIR_PLAY", "GameRecord", "play_game", "request_action"]

_CODE_KIND = {TIMEOUT: ViolationKind.TIMEOUT, CRASH: ViolationKind.CRASH, OVERSIZE: ViolationKind.OVERSIZE}
#: Draws each request's delay under ``time.jitter_ms``: from the system's entropy, never from the
#: game's seed (a bot that could predict it could read its partner's answer times through it).
_JITTER = random.SystemRandom()
_RECEIVED_BYTES = 500
#: the fields of a bot's answer protocol.md defines (ready: type, name; action: type, id, action or
#: index; the Python SDK's sdk_fallback note): the log keeps these only, so a bot cannot fill the
#: league's disk with fields the referee ignores
_ANSWER_FIELDS = frozenset({"type", "id", "action", "index", "name", "sdk_fallback"})
#: an answer of these fields alone is logged as it came (no free text to cut)
_ACTION_FIELDS = frozenset({"type", "id", "action", "index"})
#: characters of a free-text field of an answer (a ready's name, an SDK's fallback note) the log keeps
_FREE_TEXT = 300
#: characters of what a bot wrote to stderr while deciding that the log keeps with its move
STDERR_PER_MOVE = 1024
_dumps = orjson.dumps
APPEND_NEWLINE = orjson.OPT_APPEND_NEWLINE


@dataclass(frozen=True)
class FairPlay:
    """The fair-play rules, each on by default. Only a benchmark turns one off (bench/fairplay.py
    measures what each costs, side by side with the behaviour before it); a league never does.

    cpu_clock:        bots frozen between turns, deadlines in the bot's own time (its process
                      tree's CPU time, or its wall time minus the time it was kept from
                      running), where cgroups can be made (:mod:`harness.play.cpuclock`); off:
                      wall-clock deadlines, never frozen.
    process_per_deal: a bot process never plays two games of one deal (:class:`BotPool`); off:
                      processes reused across the seat orders of a deal.
    """

    cpu_clock: bool = True
    process_per_deal: bool = True


#: every fair-play rule on: what a league plays with
FAIR_PLAY = FairPlay()


@dataclass(frozen=True)
class RefereeConfig:
    """How games are refereed.

    strikes:         violations a seat may commit in one game before it forfeits (0: the first).
    log_dir:         directory of the per-bot stderr logs (``None``: keep only the tail in memory).
    record_messages: keep every message and public event in ``GameRecord.log`` (violations are
                     always logged there).
    fair_play:       the fair-play rules (:class:`FairPlay`; all on unless a benchmark says otherwise).
    """

    time: TimeControls = TimeControls()
    limits: ResourceLimits = ResourceLimits()
    strikes: int = 0
    log_dir: str | None = None
    record_messages: bool = False
    fair_play: FairPlay = FAIR_PLAY


@dataclass
class GameRecord:
    """Everything about one refereed game; the source of truth ratings are derived from."""

    game_id: str
    game: str
    options: dict[str, Any]
    seed: int
    bots: list[str]
    ranking: list[int]
    scores: list[Any]
    ended_by: str
    forfeits: list[int]
    violations: list[Violation]
    log: list[LogEntry]
    decisions: int
    seconds: float
    #: decisions sent to a bot (the rest were forced moves or played by the fallback)
    requests: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def forfeit_ranking(ranking: Sequence[int], forfeits: Sequence[int]) -> list[int]:
    """Re-rank: seats that forfeited share the last rank; the others keep their order among themselves."""
    out = list(ranking)
    gone = set(forfeits)
    if not gone:
        return out
    keep = [s for s in range(len(ranking)) if s not in gone]
    for s in keep:
        out[s] = sum(1 for o in keep if ranking[o] < ranking[s])
    for s in gone:
        out[s] = len(keep)
    return out


def _pool_key(game: Game, options: Mapping[str, Any], config: RefereeConfig) -> PoolKey:
    return (game.name, _dumps(dict(options), option=orjson.OPT_SORT_KEYS), config.time, config.limits, config.fair_play)


def _text(data: bytes, limit: int = _RECEIVED_BYTES) -> str:
    text = data[:limit].decode("utf-8", "backslashreplace")
    return text + ("...[truncated]" if len(data) > limit else "")


def _normalised(msg: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """An answer's protocol fields (free text cut to _FREE_TEXT characters) and how many others it had."""
    kept = {}
    for key, value in msg.items():
        if key in _ANSWER_FIELDS:
            kept[key] = value[:_FREE_TEXT] if isinstance(value, str) else value
    return kept, len(msg) - len(kept)


def _detached(snapshot: Any) -> Any:
    """A deep copy of a JSON-able value (an engine's to_json may share lists with the live state)."""
    return orjson.loads(_dumps(snapshot))


def request_action(proc: BotProcess, line: bytes, request_id: int, legal: list[Action], budget_ms: float,
                   max_depth: int) -> tuple[int, bytes, float, int | protocol.BadMessage]:
    """The bot's turn (:meth:`BotProcess.ask`): thaw it, send one request line and read the answer
    within ``budget_ms`` (where bots are frozen between turns, of the larger of its tree's CPU
    time and its wall time minus the time it was kept from running; else of wall-clock time),
    freeze it again.

    Returns the outcome code (OK, TIMEOUT, CRASH, OVERSIZE), the answer line, the milliseconds it
    is charged (``proc.last_clock`` has the CPU and wall time) and, when the code is OK, the index
    of the chosen action or the :class:`protocol.BadMessage` saying why the answer chooses none
    (then the index is -1).
    """
    code, data, clock = proc.ask(line, int(budget_ms))
    took_ms = clock.charged_ms  # (cpuclock: CPU time, or wall time minus the time kept from running)
    if code != OK:
        return code, data, took_ms, -1
    try:
        return code, data, took_ms, protocol.parse_action(data, request_id, legal, max_depth)
    except protocol.BadMessage as exc:
        return code, data, took_ms, exc


class _Table:
    """The state of one refereed game (internal to :func:`play_game`)."""

    def __init__(self, game: Game, options: dict[str, Any], seed: int, game_id: str, seats: Sequence[BotSpec],
                 pool: BotPool, config: RefereeConfig, state: State) -> None:
        self.game = game
        self.options = options
        self.seed = seed
        self.game_id = game_id
        self.seats = list(seats)
        self.pool = pool
        self.config = config
        self.players = len(seats)
        self.key = _pool_key(game, options, config)
        self.procs: list[BotProcess | None] = [None] * self.players
        self.strikes_used = [0] * self.players
        self.forfeited: list[int] = []
        self.violations: list[Violation] = []
        self.log: list[LogEntry] = []
        self.record_messages = config.record_messages
        self.t0 = time.monotonic()
        self.decision = 0
        self.state = state
        self.fallback = random.Random(f"tablebots-fallback:{seed}")
        self.bank = [config.time.bank_ms] * self.players
        self.events_sent = [0] * self.players
        self.events_logged = 0
        self.request_id = 0

    # ---- logging -------------------------------------------------------------------------
    def note(self, entry: LogEntry) -> None:
        entry["t"] = round(time.monotonic() - self.t0, 6)
        self.log.append(entry)

    def sent(self, seat: int, msg: Mapping[str, Any]) -> None:
        self.note({"type": "send", "seat": seat, "bot": self.seats[seat].name, "msg": msg})

    def received(self, seat: int, data: bytes, ms: float, cpu_ms: float | None = None, accepted: bool = True,
                 charged_ms: float | None = None) -> None:
        """Log an answer: an accepted one as its protocol fields only (anything else a bot adds
        is dropped, and counted), a rejected one as its first bytes (its violation says why)."""
        entry: Received = {"type": "recv", "seat": seat, "bot": self.seats[seat].name, "ms": round(ms, 3)}
        if cpu_ms is not None:
            entry["cpu_ms"] = round(cpu_ms, 3)
        if charged_ms is not None:  # what its time was charged (cpuclock): the bank pays the overrun
            entry["charged_ms"] = round(charged_ms, 3)
        msg = None
        if accepted:
            try:
                msg = orjson.loads(data)
            except (orjson.JSONDecodeError, RecursionError):
                pass
        if isinstance(msg, dict):
            if not msg.keys() <= _ACTION_FIELDS:  # (an ordinary answer: one subset test, no copy)
                msg, dropped = _normalised(msg)
                if dropped:
                    entry["dropped_fields"] = dropped
            entry["msg"] = msg
        else:
            entry["raw"] = _text(data)
        self.note(entry)

    def stderr_of(self, seat: int, request_id: int, mark: int) -> None:
        """Log what the bot wrote to stderr while it decided (the replay shows it beside its move)."""
        proc = self.procs[seat]
        if proc is None:
            return
        proc.drain_stderr()
        text = proc.stderr_since(mark)
        if text:  # the last KiB: the store keeps every game's log (the full output is in the bot's stderr log)
            self.note({"type": "stderr", "seat": seat, "id": request_id, "text": text[-STDERR_PER_MOVE:]})

    # ---- violations ----------------------------------------------------------------------
    def violation(self, seat: int, kind: ViolationKind, detail: str, request: bytes | str, received: bytes,
                  clock: DecisionCost | None = None) -> None:
        """Record a violation; kill the process if needed; forfeit the seat past its strikes.
        ``clock``: what the decision cost (CPU and wall time, the host's load), for timeouts."""
        proc = self.procs[seat]
        if proc is not None:
            proc.drain_stderr()
        v: Violation = {"type": "violation", "game_id": self.game_id, "seed": self.seed, "decision": self.decision,
             "seat": seat, "bot": self.seats[seat].name, "kind": kind, "detail": detail,
             "request": (request.decode("utf-8", "replace") if isinstance(request, bytes) else request).rstrip("\n"),
             "received": _text(received),
             "stderr_tail": proc.stderr_tail() if proc is not None else "",
             "snapshot": _detached(self.state.to_json())}
        if clock is not None:
            v["clock"] = clock
        self.violations.append(v)
        # violations are always in the log (they are few: a seat forfeits after strikes+1 of them)
        self.note(v.copy())
        self.strikes_used[seat] += 1
        if proc is not None and kind in KILLING_KINDS:
            self.drop(seat, f"{kind}: {detail}")
        if self.strikes_used[seat] > self.config.strikes and seat not in self.forfeited:
            self.forfeited.append(seat)
            if self.procs[seat] is not None:
                self.drop(seat, f"forfeited ({kind})")
            if self.record_messages:
                self.note({"type": "forfeit", "seat": seat, "bot": self.seats[seat].name, "kind": kind})

    def drop(self, seat: int, reason: str) -> None:
        proc = self.procs[seat]
        if proc is not None:
            self.pool.discard(proc, reason)
            self.procs[seat] = None

    # ---- process start -------------------------------------------------------------------
    def spawn(self, seat: int, first_game_seat: int) -> tuple[BotProcess, bytes] | None:
        """Start the seat's bot and send hello; None (violation recorded) if it cannot start."""
        spec = self.seats[seat]
        t = self.config.time
        hello = protocol.hello(self.game.name, self.options, first_game_seat, self.players,
                               t.init_ms, t.move_ms, t.bank_ms)
        line = protocol.encode(hello)
        try:
            proc = self.pool.spawn(spec, self.key, self.config, self.seed)
        except OSError as exc:
            self.violation(seat, ViolationKind.CRASH, f"cannot start {' '.join(spec.command)!r}: {exc.strerror or exc}",
                           line, b"")
            return None
        self.procs[seat] = proc
        if self.record_messages:
            self.sent(seat, hello)
        code = proc.write(line, proc.started_at + t.init_ms / 1000)
        if code != OK:
            self.violation(seat, _CODE_KIND[code], f"at start-up: {proc.detail}", line, b"")
            return None
        return proc, line

    def await_ready(self, seat: int, proc: BotProcess, hello_line: bytes) -> bool:
        """Wait for one bot's ready (a restart); True if it started."""
        self.await_readys([(seat, proc, hello_line)])
        return self.procs[seat] is proc

    def await_readys(self, fresh: Sequence[tuple[int, BotProcess, bytes]]) -> None:
        """Wait for the readys of all freshly started bots together, each against its own
        ``init_ms`` deadline, in one poll over all their pipes.

        Waiting for one seat after another would charge innocent bots: while a silent seat 0 is
        waited for and then killed, seat 1's deadline passes with its ready unread in the pipe. A
        seat is declared late only after a last non-blocking read of its pipe finds no line, and
        only once its own deadline has passed, whatever time other seats' failures took.
        """
        init_s = self.config.time.init_ms / 1000
        pending = {seat: (proc, line) for seat, proc, line in fresh}
        while pending:
            for seat in list(pending):
                proc, hello_line = pending[seat]
                got = proc.poll_line()
                if got is None:
                    if time.monotonic() < proc.started_at + init_s:
                        continue
                    proc.detail = f"no ready within init_ms={self.config.time.init_ms}"
                    got = (TIMEOUT, b"")
                del pending[seat]
                self._accept_ready(seat, proc, hello_line, got)
            if not pending:
                return
            waiter = select.poll()
            for proc, _ in pending.values():
                for fd in proc.wait_fds():
                    waiter.register(fd, select.POLLIN)
            left = min(proc.started_at + init_s for proc, _ in pending.values()) - time.monotonic()
            if left > 0:
                waiter.poll(left * 1000.0 + 0.5)

    def _accept_ready(self, seat: int, proc: BotProcess, hello_line: bytes, got: tuple[int, bytes]) -> bool:
        """Check one seat's answer to hello; record a violation and drop it if it is no ready."""
        limits = self.config.limits
        code, data = got
        ms = (time.monotonic() - proc.started_at) * 1000
        if code != OK:
            self.violation(seat, _CODE_KIND[code], f"at start-up: {proc.detail}", hello_line, data)
            self.drop(seat, "failed its start-up")
            return False
        try:
            protocol.parse_ready(data, limits.max_json_depth)
            if self.record_messages:
                self.received(seat, data, ms)
        except protocol.BadMessage as exc:
            if self.record_messages:
                self.received(seat, data, ms, accepted=False)
            # nothing but a ready is acceptable here: whatever else came, the bot broke the handshake;
            # a runtime that fails to start prints its reason over several lines (the JVM's first is
            # only "Error occurred during initialization of VM"): keep every line it printed before it died
            rest = rest_of_output(proc)
            n_more = len(rest.split(b"\n")) if rest else 0
            more = f" (and {n_more} more line(s): see what it sent)" if rest else ""
            self.violation(seat, ViolationKind.PROTOCOL if exc.kind != ViolationKind.MALFORMED else ViolationKind.MALFORMED,
                           f"at start-up: {exc.detail}{more}", hello_line, data + b"\n" + rest if rest else data)
            self.drop(seat, "failed its start-up")
            return False
        proc.freeze()  # from now on it runs only during its turns
        return True

    def send_start(self, seat: int) -> None:
        proc = self.procs[seat]
        if proc is None:
            return
        msg = protocol.start(self.game_id, seat, self.players)
        line = protocol.encode(msg)
        if self.record_messages:
            self.sent(seat, msg)
        code = proc.write(line, time.monotonic() + self.config.time.move_ms / 1000)
        if code != OK:
            self.violation(seat, _CODE_KIND[code], f"when sent start: {proc.detail}", line, b"")

    def restart(self, seat: int) -> bool:
        """Mid-game restart of a killed process (only under strikes); hello, ready, start."""
        spawned = self.spawn(seat, seat)
        if spawned is None:
            return False
        proc, hello_line = spawned
        if not self.await_ready(seat, proc, hello_line):
            return False
        self.send_start(seat)
        return self.procs[seat] is not None


    # ---- one game --------------------------------------------------------------------------
    def seat_bots(self) -> None:
        """Give every seat a process (an idle one of the pool, else a new one, started in
        parallel), wait for the readys and send each seat its start."""
        fresh: list[tuple[int, BotProcess, bytes]] = []
        answered: list[tuple[int, BotProcess, bytes, tuple[int, bytes]]] = []
        deal = self.seed if self.config.fair_play.process_per_deal else None  # None: any process will do
        pool = self.pool
        pool.tend_spares()
        started: list[int] = []  # seats whose bot needed a process not played before
        for seat, spec in enumerate(self.seats):
            proc = pool.take(spec, self.key, deal)
            if proc is not None:
                self.procs[seat] = proc
                continue
            started.append(seat)
            spare = pool.take_spare(spec, self.key, deal)
            if spare is not None:
                self.procs[seat] = spare.proc
                if self.record_messages:
                    self.sent(seat, spare.hello)
                if spare.got is None:
                    fresh.append((seat, spare.proc, spare.line))
                else:
                    answered.append((seat, spare.proc, spare.line, spare.got))
                continue
            spawned = self.spawn(seat, seat)
            if spawned is not None:
                fresh.append((seat, *spawned))
        for seat, proc, line, got in answered:
            self._accept_ready(seat, proc, line, got)
        self.await_readys([(seat, proc, line) for seat, proc, line in fresh if self.procs[seat] is proc])
        for seat in range(self.players):
            self.send_start(seat)
        if deal is not None and pool.spares:
            self.start_spares(started)

    def start_spares(self, seats: Sequence[int]) -> None:
        """Spares of the bots of ``seats`` (they needed new processes: their next game likely will)."""
        t = self.config.time
        for seat in seats:
            hello = protocol.hello(self.game.name, self.options, seat, self.players, t.init_ms, t.move_ms, t.bank_ms)
            self.pool.start_spares(self.seats[seat], self.key, self.config, hello)

    def log_events(self) -> None:
        """Log the public events not logged yet (when messages are recorded)."""
        events = self.state.events
        if self.record_messages and self.events_logged < len(events):
            for event in events[self.events_logged:]:
                self.note({"type": "event", "event": event})
            self.events_logged = len(events)

    def play_for(self, seat: int, action: Action, why: str) -> None:
        """Play ``action`` for ``seat`` without asking its bot, logging why."""
        if self.record_messages:
            self.note({"type": "auto", "seat": seat, "action": action, "why": why})
        self.state.apply(action)
        self.decision += 1

    def fall_back(self, seat: int, legal: list[Action], why: str) -> None:
        """The seeded uniform-random fallback plays the decision of a seat that forfeited or
        just committed a violation."""
        self.play_for(seat, legal[self.fallback.randrange(len(legal))], why)

    def ask(self, seat: int, legal: list[Action]) -> Action | None:
        """Send the seat's bot its request and read its answer under the deadline; the chosen
        action, or ``None`` once a violation is recorded (the caller falls back)."""
        proc = self.procs[seat]
        if proc is None:
            self.restart(seat)  # killed earlier, strikes left: a new process (a failure is a violation)
            proc = self.procs[seat]
            if proc is None:
                return None
        pending = proc.pending_output()
        if pending:
            self.violation(seat, ViolationKind.PROTOCOL, "sent output when not asked (before this request)", "", pending)
            return None
        state = self.state
        events = state.events
        seen = self.events_sent[seat]
        new_events = events[seen:] if seen < len(events) else []
        self.events_sent[seat] = len(events)
        self.request_id += 1
        move_ms = self.config.time.move_ms
        budget_ms = move_ms + self.bank[seat]
        msg: protocol.Request = {"type": "request", "id": self.request_id, "seat": seat, "observation": state.observation(seat),
               "actions": legal, "events": new_events, "time_left_ms": budget_ms}
        line = _dumps(msg, option=APPEND_NEWLINE)
        if self.record_messages:
            self.sent(seat, msg)
        max_depth = self.config.limits.max_json_depth
        stderr_mark = proc.stderr_mark()
        if self.config.time.jitter_ms:  # (the bot is frozen until it is asked: the delay is never its)
            time.sleep(_JITTER.uniform(0, self.config.time.jitter_ms) / 1000)
        code, data, took_ms, index = request_action(proc, line, self.request_id, legal, budget_ms, max_depth)
        clock = proc.last_clock
        if code != OK:
            detail = proc.detail
            if code == TIMEOUT:
                detail = (f"no answer within {budget_ms} ms (move_ms={move_ms}, bank left {self.bank[seat]} ms): "
                          f"{proc.detail}")
            self.violation(seat, _CODE_KIND[code], detail, line, data, clock.to_json())
            return None
        if self.record_messages:
            self.received(seat, data, clock.wall_ms, clock.cpu_ms, not isinstance(index, protocol.BadMessage),
                          clock.charged_ms)
        if isinstance(index, protocol.BadMessage):
            detail = index.detail
            if index.kind == ViolationKind.ILLEGAL:  # say why, in the game's words (slow path, rare)
                detail = explain_illegal(self.game, state, data, legal, max_depth, detail)
            self.violation(seat, index.kind, detail, line, data)
            return None
        if took_ms > move_ms:
            self.bank[seat] = max(0, self.bank[seat] - int(took_ms - move_ms + 0.999))
        if self.record_messages:  # the answer is accepted (a rejected answer's stderr is in its violation)
            self.stderr_of(seat, self.request_id, stderr_mark)
        return legal[index]

    def finish(self) -> GameRecord:
        """Rank (forfeits last), send every live bot the result and return the game's record."""
        self.log_events()
        result = self.state.result()
        ranking = forfeit_ranking(result["ranking"], self.forfeited)
        scores = list(result["scores"])
        ended_by = result["ended_by"]
        assert ended_by is not None  # (the game is over: it says how it ended)
        res_msg = protocol.result(self.game_id, ranking, scores, ended_by)
        res_line = protocol.encode(res_msg)
        for seat, proc in enumerate(self.procs):
            if proc is not None:
                if self.record_messages:
                    self.sent(seat, res_msg)
                proc.write(res_line, time.monotonic() + self.config.time.move_ms / 1000)
        return GameRecord(game_id=self.game_id, game=self.game.name, options=dict(self.options), seed=self.seed,
                          bots=[s.name for s in self.seats], ranking=ranking, scores=scores, ended_by=ended_by,
                          forfeits=sorted(self.forfeited), violations=self.violations, log=self.log,
                          decisions=self.decision, seconds=time.monotonic() - self.t0, requests=self.request_id)

    def release(self) -> None:
        """Return the table's processes to the pool."""
        for proc in self.procs:
            if proc is not None:
                self.pool.release(proc)


def play_game(game: Game, options: dict[str, Any], seed: int, game_id: str, seats: Sequence[BotSpec], pool: BotPool,
              config: RefereeConfig) -> GameRecord:
    """Play one game of ``game`` between the bots in ``seats`` (seat i is ``seats[i]``) and return its record.

    Never raises because of a bot: every misbehaviour becomes a violation in the record, and the
    ranking already puts forfeiting seats last (tied). Raises ``InvalidOptions`` for bad options
    or player counts and ``SandboxUnavailable`` if the sandbox cannot be used, before any process
    starts.
    """
    options = game.validate_options(options)
    players = game.validate_players(len(seats))
    check_sandbox(config.limits)
    state = game.new_state(players, seed, options)
    table = _Table(game, options, seed, game_id, seats, pool, config, state)
    try:
        table.seat_bots()
        while not state.is_terminal():
            table.log_events()
            seat = cast(int, state.current_player)  # not None: the game is not over
            legal = state.legal_actions()
            if len(legal) == 1:
                table.play_for(seat, legal[0], "only legal action")
            elif seat in table.forfeited:
                table.fall_back(seat, legal, "forfeited seat")
            elif (action := table.ask(seat, legal)) is not None:
                state.apply(action)
                table.decision += 1
            else:
                table.fall_back(seat, legal, "fallback after violation")
        return table.finish()
    finally:
        table.release()
