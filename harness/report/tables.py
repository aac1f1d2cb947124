"""What people read: the league table (terminal, Markdown, CSV, JSON), violations, game replays.

Everything here reads the store; nothing writes except the ratings catch-up in
:func:`league_table` (derived data, see :mod:`harness.league.ratings`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.league import ratings as rating_mod
from harness.league.config import LeagueConfig
from harness.league.store import LeagueStore
from harness.league.store_rows import GameRow, SeatRow, StoredViolation, ViolationRow
from harness.report.safe_text import visible

__all__ = ["TableRow", "league_table", "table_rows", "finish_rows", "format_table", "TABLE_FORMATS", "format_violation_line",
           "format_violation", "replay_actions", "format_replay", "truncation_note"]

TABLE_FORMATS = ("table", "md", "csv", "json")
COLUMNS = ("rank", "bot", "version", "mu", "sigma", "mu_ci", "rating", "games", "wins", "mean_score", "mean_score_ci",
           "mean_rank", "mean_rank_ci", "p_better", "violations")


@dataclass
class TableRow:
    """One line of the league table (one bot version)."""

    rank: int
    bot: str
    version: str
    current: bool  # this version is the one in the config now
    mu: float
    sigma: float
    rating: float  # mu - 3 sigma (the sort key of the incremental table; the fitted one sorts by mu)
    games: int
    wins: int  # games ranked first (shared first places count)
    mean_rank: float | None  # 1 = always first
    violations: int
    mu_ci: list[float] | None = None  # mu +- 1.96 sigma: TrueSkill's own 95% interval
    mean_score: float | None = None
    mean_score_ci: list[float | None] | None = None  # clustered by duplicate set (harness.report.statistics)
    mean_rank_ci: list[float | None] | None = None
    p_better: float | None = None  # P(this bot's skill > the next row's), from the table's fit
    noisy: float | None = None  # flagged by the fit's consistency check: its dispersion
    widened: float | None = None  # then: the factor on its sigma (its own sets' and sqrt(dispersion))
    noise: float | None = None  # its fitted performance noise over beta, when the fit found noises that differ


def league_table(store: LeagueStore, config: LeagueConfig, *, recompute: bool = False,
                 current_only: bool = False, stats: bool = True, played: Any = None) -> list[TableRow]:
    """The table: every current bot version, and every older version that played (unless
    ``current_only``). With ``stats``: mu, sigma, the order (by mu) and P(>next) from the fit of
    :func:`harness.league.ratings_fit.fit_table`, and the mean score and rank intervals of
    :mod:`harness.report.statistics` (clustered by duplicate set); without, the incremental
    ratings by mu - 3 sigma. ``played``: the finished games as :func:`statistics.load_arrays`
    returns them, when the caller has them already (the fit and the intervals read them; per-game
    rows, as :func:`statistics.load_games` returns them, are not used: the table reads arrays)."""
    if recompute:
        rating_mod.recompute(store, config.rating)
    ratings, _applied, _tail = rating_mod.current_ratings(store, config.rating)
    rows, ids = table_rows(store, config, store.seat_stats(), ratings, current_only=current_only)
    if not (stats and rows):  # the incremental ratings: TrueSkill's conservative order
        rows.sort(key=lambda r: (-r.rating, -r.mu, r.bot, r.version))
        return finish_rows(rows, ids, None, {})
    # here: numpy and scipy cost ~0.4 s to import; `harness table --incremental` stays instant without them
    from harness.league import queries
    from harness.league.ratings_fit import fit_batches
    from harness.report import statistics

    # mu, sigma, the order and P(>next) from one fit of TrueSkill's model to all games at
    # once, with intervals robust to the duplicate sets (harness.league.ratings_fit), read
    # from the store straight into arrays (at 1,000,000 games: 2.3 s, where one Python object
    # per game took 6.5 s and the fit 1.5 s; bench/table.py). A duplicate set is one deal of
    # one round; the deal's seed already names its bots (a set merged with an older
    # version's on the same deal is a coarser cluster: still valid)
    # the same arrays feed the mean score and rank intervals below: the games are read once
    given = list(played or ())
    arrays = given if given and isinstance(given[0], queries.GameArrays) else queries.done_game_arrays(store)
    fit = fit_batches(queries.table_batches(arrays), mu=config.rating.mu, sigma=config.rating.sigma,
                      beta=config.rating.beta)
    return finish_rows(rows, ids, fit, statistics.bot_intervals(arrays))


def table_rows(store: LeagueStore, config: LeagueConfig, seat_stats: dict[int, dict[str, float]],
               ratings: dict[int, tuple[float, float]], *, current_only: bool = False
               ) -> tuple[list[TableRow], dict[tuple[str, str], int]]:
    """The table's rows before any fit, unsorted (``seat_stats`` as :meth:`LeagueStore.seat_stats`
    gives them, ``ratings`` the incremental ones), and each row's version id by (bot, version)."""
    current = {(b.name, b.version) for b in config.bots}
    rows = []
    ids: dict[tuple[str, str], int] = {}
    for v in store.versions():
        s = seat_stats.get(v.id, {})
        games = int(s.get("games", 0) or 0)
        is_current = (v.name, v.version) in current
        if not games and (not is_current or v.version == "unavailable"):
            continue
        if current_only and not is_current:
            continue
        mu, sigma = ratings.get(v.id, (config.rating.mu, config.rating.sigma))
        ids[(v.name, v.version)] = v.id
        rows.append(TableRow(rank=0, bot=v.name, version=v.version, current=is_current, mu=mu, sigma=sigma,
                             rating=rating_mod.conservative(mu, sigma), games=games,
                             wins=int(s.get("wins", 0) or 0),
                             mean_rank=(s["rank_sum"] / games + 1) if games else None,
                             violations=int(s.get("violations", 0) or 0)))
    return rows, ids


def finish_rows(rows: list[TableRow], ids: dict[tuple[str, str], int], fit: Any,
                per_bot: dict[int, dict[str, Any]]) -> list[TableRow]:
    """The rows with ``fit``'s mu, sigma, order and P(>next) (a
    :class:`~harness.league.ratings_fit.TableFit`; None: ``rows`` already sorted) and the mean
    score and rank intervals ``per_bot`` (:func:`harness.report.statistics.bot_intervals`), ranked."""
    if fit is not None:
        for r in rows:
            vid = ids[(r.bot, r.version)]
            if vid in fit.mu:
                r.mu, r.sigma = fit.mu[vid], fit.sigma[vid]
                r.rating = rating_mod.conservative(r.mu, r.sigma)
        # by the fit's mu (the posterior: a bot with few games is already pulled to the mean), so
        # that every adjacent pair has P(>next) >= 0.5; bots without games last
        rows.sort(key=lambda r: (ids[(r.bot, r.version)] not in fit.mu, -r.mu, r.bot, r.version))
    for i, r in enumerate(rows, 1):
        r.rank = i
        r.mu_ci = [r.mu - 1.96 * r.sigma, r.mu + 1.96 * r.sigma]
    if fit is not None:
        order = [ids[(r.bot, r.version)] for r in rows]
        for r, vid, below in zip(rows, order, [*order[1:], None]):
            got = per_bot.get(vid)
            if got:
                r.mean_score, r.mean_score_ci = got["mean_score"], got["mean_score_ci"]
                r.mean_rank_ci = got["mean_rank_ci"]
            r.p_better = fit.p_better(vid, below) if below in fit.mu and vid in fit.mu else None
            r.noisy, r.widened, r.noise = fit.noisy.get(vid), fit.widened.get(vid), fit.noise.get(vid)
    return rows


def _interval(ci: Sequence[float | None] | None, digits: int = 2) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "-"
    return f"{ci[0]:.{digits}f}-{ci[1]:.{digits}f}"


def _cells(r: TableRow) -> list[str]:
    return [str(r.rank), r.bot, r.version + ("" if r.current else " (old)"), f"{r.mu:.2f}",
            f"+-{1.96 * r.sigma:.2f}" + ("*" if r.noisy or _noisier(r) else ""), f"{r.rating:.2f}", str(r.games), str(r.wins),
            "-" if r.mean_score is None else f"{r.mean_score:.2f}", _interval(r.mean_score_ci),
            "-" if r.mean_rank is None else f"{r.mean_rank:.2f}", _interval(r.mean_rank_ci),
            "-" if r.p_better is None else f"{r.p_better:.2f}", str(r.violations)]


HEADERS = ["rank", "bot", "version", "mu", "95%", "mu-3sigma", "games", "wins", "score", "score 95%", "mean rank",
           "rank 95%", "P(>next)", "violations"]
NUMERIC = {0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}


def format_table(rows: Sequence[TableRow], fmt: str = "table", *, info: dict[str, Any] | None = None) -> str:
    """The table as text in ``fmt`` (one of :data:`TABLE_FORMATS`). ``info`` goes into the JSON."""
    if fmt == "json":
        return json.dumps({**(info or {}), "table": [asdict(r) for r in rows]}, indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        # an interval is two numeric columns (<name>_low, <name>_high): a spreadsheet or
        # pandas reads them as numbers, not as JSON text
        writer.writerow([part for c in COLUMNS for part in ((c[:-3] + "_low", c[:-3] + "_high")
                                                            if c.endswith("_ci") else (c,))] + ["current"])

        def num(x: float | None) -> str:
            return "" if x is None else f"{x:.4f}"

        def ci(x: Sequence[float | None] | None) -> tuple[str, str]:
            return ("", "") if not x else (num(x[0]), num(x[1]))

        for r in rows:
            writer.writerow([r.rank, r.bot, r.version, num(r.mu), num(r.sigma), *ci(r.mu_ci), num(r.rating), r.games,
                             r.wins, num(r.mean_score), *ci(r.mean_score_ci), num(r.mean_rank), *ci(r.mean_rank_ci),
                             num(r.p_better), r.violations, str(r.current).lower()])
        return out.getvalue().rstrip("\n")
    body = [_cells(r) for r in rows]
    if fmt == "md":
        lines = ["| " + " | ".join(HEADERS) + " |",
                 "| " + " | ".join("---:" if i in NUMERIC else "---" for i in range(len(HEADERS))) + " |"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |" for cells in body]
        return "\n".join(lines + noisy_notes(rows))
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(TABLE_FORMATS)})")
    widths = [max(len(h), *(len(c[i]) for c in body)) if body else len(h) for i, h in enumerate(HEADERS)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in NUMERIC else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(HEADERS), line(["-" * w for w in widths])] + [line(c) for c in body] + noisy_notes(rows))


#: a fitted noise this far above beta is named under the table
NOTED_NOISE = 1.25


def _noisier(r: TableRow) -> bool:
    return r.noise is not None and r.noise >= NOTED_NOISE


def noisy_notes(rows: Sequence[TableRow]) -> list[str]:
    """One line per bot the fit's consistency check flagged or whose fitted noise is well above
    beta (its 95% cell is marked ``*``)."""
    notes = []
    for r in rows:
        said = []
        if r.noisy is not None and r.widened is not None:
            said.append(f"results noisier than the model allows (their variance {r.noisy:.1f}x what its information "
                        f"predicts, relative to the field); its mu is pulled towards the mean and its interval is "
                        f"widened (sigma x{r.widened:.2f}, with its own sets' small-sample factor)")
        if _noisier(r):
            said.append(f"plays noisier than the others (fitted performance noise {r.noise:.2f}x beta, shrunk towards "
                        f"the field's); its mu is read with that noise and its interval includes the noise's "
                        f"uncertainty")
        if said:
            notes.append(f"* {r.bot}@{r.version}: " + "; ".join(said))
    return notes


# ---------------------------------------------------------------------------------------------
# violations


def move_number(decision: Any) -> str:
    """The move a person reads: 1-based, as ``harness replay`` numbers the moves of a game (the
    stored ``decision`` is the 0-based count of moves played before it); ``start-up`` if none."""
    return f"move {decision + 1}" if isinstance(decision, int) else "start-up"


def request_id_of(record: Mapping[str, Any]) -> int | None:
    """The protocol request id of a violation's request (what the bot's own log shows), if any."""
    try:
        request = json.loads(record.get("request") or "null")
    except ValueError:
        return None
    return request.get("id") if isinstance(request, dict) else None


def format_violation_line(row: ViolationRow) -> str:
    """One violation on one line: id, game, move (1-based, as in ``replay``), seat, bot, kind, detail."""
    bot = f"{row.name}@{row.version}" if row.name else "?"
    return (f"#{row.id}  {row.game_id}  {move_number(row.decision)}  seat {row.seat}  {bot}  "
            f"{row.kind}  {row.detail}")


def _block(text: str, indent: str = "    ") -> str:
    if not text:
        return indent + "(nothing)"
    # split on newlines only: a CR, form feed or other control character a bot sent must show
    # up escaped on its line (harness.report.safe_text), not act as a line break
    return "\n".join(indent + line for line in visible(text).split("\n") or [""])


def format_violation(row: StoredViolation, record: Mapping[str, Any], config_path: str) -> str:
    """One violation in full: where, what was asked, what the bot sent, its stderr tail."""
    command = " ".join(json.loads(row.command)) if row.command else "?"
    snapshot = record.get("snapshot")
    lines = [
        f"violation #{row.id}: {row.kind}: {row.detail}",
        f"game:     {row.game_id} (seed {row.seed}), {move_number(row.decision)}"
        + (f" (request id {request_id_of(record)} in the bot's own log)" if request_id_of(record) else "")
        + f", seat {row.seat} (seats count from 0, as in the protocol)",
        f"bot:      {row.name}@{row.version}: {command} (in {row.cwd})",
        "request (the exact line sent):",
        _block(record.get("request", "")),
        "received (what the bot sent, truncated):",
        _block(record.get("received", "")),
        "stderr tail:",
        _block(record.get("stderr_tail", "")),
        f"snapshot: {'stored, ' + str(len(json.dumps(snapshot))) + ' bytes (--json prints it)' if snapshot else 'none'}",
        f"replay:   harness violations {config_path} --replay {row.id}",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# game replays


def replay_actions(log: Iterable[dict[str, Any]]) -> list[tuple[int, Any, str]]:
    """The actions applied in a game, in order, from its referee log: ``(seat, action, how)``.

    ``how`` is ``"bot"`` (the bot's answer), or the referee's reason for playing it itself
    (``only legal action``, ``fallback after violation``, ``forfeited seat``). A bot's answer
    counts unless a violation of that seat follows it.
    """
    return [(seat, action, how) for seat, action, how, _ in replay_moves(log)]


def replay_moves(log: Iterable[dict[str, Any]]) -> list[tuple[int, Any, str, int | None]]:
    """:func:`replay_actions` with each move's protocol request id (None for the referee's own moves)."""
    applied: list[tuple[int, Any, str, int | None]] = []
    requests: dict[int, dict[str, Any]] = {}
    candidate: tuple[int, Any, str, int | None] | None = None
    for entry in log:
        kind = entry.get("type")
        if kind == "violation":
            # the answer just received was rejected (the referee counts decisions as actions applied)
            if candidate is not None and entry.get("seat") == candidate[0] and entry.get("decision") == len(applied):
                candidate = None
                continue
        if candidate is not None:
            applied.append(candidate)
            candidate = None
        if kind == "send" and isinstance(entry.get("msg"), dict) and entry["msg"].get("type") == "request":
            requests[entry["seat"]] = entry["msg"]
        elif kind == "recv" and isinstance(entry.get("msg"), dict) and entry["msg"].get("type") == "action":
            msg = entry["msg"]
            req = requests.get(entry["seat"])
            if req is None or msg.get("id") != req.get("id"):
                continue
            legal = req.get("actions", [])
            if "index" in msg and isinstance(msg["index"], int) and 0 <= msg["index"] < len(legal):
                action = legal[msg["index"]]
            else:
                action = next((a for a in legal if a == msg.get("action")), msg.get("action"))
            candidate = (entry["seat"], action, "bot", req.get("id"))
            requests.pop(entry["seat"], None)
        elif kind == "auto":
            applied.append((entry["seat"], entry["action"], entry.get("why", "referee"), None))
    if candidate is not None:
        applied.append(candidate)
    return applied


def truncation_note(log: Sequence[dict[str, Any]] | None) -> str | None:
    """One line saying the game's log was cut at its cap (None if it was not)."""
    mark = next((e for e in log or () if e.get("type") == "truncated"), None)
    if mark is None:
        return None
    return (f"log truncated: this game's log passed its cap of {int(mark.get('cap_bytes', 0)) // 1024} KB "
            f"(logs.game_kb): {mark.get('dropped_lines', '?')} later lines ({mark.get('dropped_bytes', '?')} bytes) "
            f"were not kept, its violations were")


def format_replay(game: Any, options: dict[str, Any], game_row: GameRow, seats: Sequence[SeatRow],
                  log: list[dict[str, Any]] | None, violations: Sequence[ViolationRow] = ()) -> str:
    """A game move by move with the table picture after each move, rebuilt from seed and actions."""
    names = [f"{s.name}@{s.version}" for s in seats]
    out = [f"game {game_row.id}: {game.name}, round {game_row.round}, seed {game_row.seed}, "
           f"status {game_row.status}",
           "seats: " + ", ".join(f"{i} {n}" for i, n in enumerate(names))]
    if game_row.status != "done":
        out.append("(not played yet)")
        return "\n".join(out)
    if log is None:
        out.append("(no log stored for this game)")
    else:
        state = game.new_state(len(seats), game_row.seed, options)
        out += ["", state.render()]
        for n, (seat, action, how, request_id) in enumerate(replay_moves(log), 1):
            note = f"   [request id {request_id}]" if how == "bot" else f"   [{how}]"
            try:
                text = game.format_action(action)
            except Exception:  # noqa: BLE001 - a text form is a nicety; fall back to JSON
                text = json.dumps(action)
            out += ["", f"{n}. seat {seat} ({names[seat] if seat < len(names) else '?'}): {text}{note}"]
            try:
                state.apply(action)
            except ValueError as exc:
                out.append(f"(the log does not replay here: {exc})")
                break
            out.append(state.render())
        cut = truncation_note(log)
        if cut:
            out += ["", f"({cut}; the moves after this one are not in it)"]
    out.append("")
    ranks = "; ".join(f"{names[s.seat]}: rank {'?' if s.rank is None else s.rank + 1}, score {s.score}"
                      + (" (forfeited)" if s.forfeited else "") for s in seats)
    out.append(f"result ({game_row.ended_by}): {ranks}")
    for v in violations:
        out.append("violation " + format_violation_line(v))
    return "\n".join(out)
