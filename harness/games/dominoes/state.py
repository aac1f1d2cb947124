"""All-Fives Dominoes, 2-4 players, the state and its turn flow (rulings D1-D8 of docs/rules/dominoes.md).

Double-six set, free-for-all, one line of play with two open ends and no spinner.
After every placement the open ends are counted (a double at an end counts both
halves; a one-tile line counts both its halves) and a positive multiple of 5 is
scored. A hand ends on a domino (the winner scores the opponents' pips rounded to
the nearest 5) or on a block (lowest-first differences). The first to the target
wins; ties at the top are played off.

Internally a tile is a tuple ``(high, low)``; the line is a list of tiles oriented
left to right, ``(left half, right half)``. In JSON a tile is ``[high, low]``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from ..base import (
    Action,
    EndedBy,
    Game,
    GameResult,
    IllegalAction,
    InvalidAction,
    InvalidSnapshot,
    State,
    ranking_from_keys,
)

Tile = tuple[int, int]

#: The double-six set in canonical (descending) order: 6-6, 6-5, ..., 6-0, 5-5, ..., 0-0.
ALL_TILES: tuple[Tile, ...] = tuple((a, b) for a in range(6, -1, -1) for b in range(a, -1, -1))
HAND_SIZE = 7
REDEAL_DOUBLES = 5
SNAPSHOT_VERSION = 1
_ACTION_KEYS = {"play": {"type", "tile", "end"}, "draw": {"type"}, "pass": {"type"}}


def round5(pips: int) -> int:
    """Round to the nearest multiple of 5: 1-2 -> 0, 3-7 -> 5, 8-12 -> 10, ... (D6)."""
    return 5 * ((pips + 2) // 5)


def tile_text(tile: Any) -> str:
    return f"{tile[0]}-{tile[1]}"


def blocked_points(pips: list[int]) -> list[int]:
    """Points of a blocked hand (D7): each player scores the rounded sum of his differences to
    every player with a higher count; nobody scores if the lowest count is shared."""
    low = min(pips)
    if pips.count(low) > 1:
        return [0] * len(pips)
    return [round5(sum(q - p for q in pips if q > p)) for p in pips]


class DominoesState(State):
    """One game of All-Fives Dominoes. Build it with :meth:`Dominoes.new_state`."""

    def __init__(self, players: int, options: dict[str, Any], rng: random.Random) -> None:
        self.players = players
        self.options = options
        self.target: int = options["target"]
        self.max_turns: int = options["max_turns"]
        self.rng = rng
        self.scores = [0] * players
        self.hand_number = 0
        self.hands: list[list[Tile]] = [[] for _ in range(players)]
        self.graveyard: list[Tile] = []      # the next tile drawn is the last one
        self.line: list[Tile] = []
        self.left: int = -1                  # open end values, -1 while the line is empty
        self.right: int = -1
        self.left_double = False             # is the tile at that end a double?
        self.right_double = False
        self.current_player: int | None = None
        self.leader = 0                      # seat that started the current hand
        self.lead_tile: Tile | None = None   # the tile the first hand must be led with
        self.turns = 0
        self.playoff_hands_left: int | None = None
        self.ended_by: str | None = None
        self.end_reason: str | None = None
        self.events: list[dict[str, Any]] = []
        self._legal: list[Action] | None = None

    # ------------------------------------------------------------------ queries

    def is_terminal(self) -> bool:
        return self.ended_by is not None

    def legal_actions(self) -> list[Action]:
        if self._legal is None:
            self._legal = self._compute_legal()
        return list(self._legal)

    def _compute_legal(self) -> list[Action]:
        seat = self.current_player
        if seat is None:
            return []
        hand = self.hands[seat]
        if not self.line:
            if self.lead_tile is not None:
                return [{"type": "play", "tile": list(self.lead_tile)}]
            return [{"type": "play", "tile": [a, b]} for a, b in hand]
        left, right = self.left, self.right
        plays: list[Action] = []
        if left == right and self.left_double == self.right_double:
            # Both ends alike: either side gives the same position, offered once (on the left).
            for a, b in hand:
                if a == left or b == left:
                    plays.append({"type": "play", "tile": [a, b], "end": "left"})
        else:
            for a, b in hand:
                if a == left or b == left:
                    plays.append({"type": "play", "tile": [a, b], "end": "left"})
                if a == right or b == right:
                    plays.append({"type": "play", "tile": [a, b], "end": "right"})
        if plays:
            return plays
        if self.graveyard:
            return [{"type": "draw"}]
        return [{"type": "pass"}]

    def can_play(self, seat: int) -> bool:
        """True if ``seat`` holds a tile that fits an open end (any tile while the line is empty)."""
        if not self.line:
            return bool(self.hands[seat])
        left, right = self.left, self.right
        for a, b in self.hands[seat]:
            if a == left or a == right or b == left or b == right:
                return True
        return False

    def _is_blocked(self) -> bool:
        """Nobody can play and nobody can draw: the hand is blocked."""
        if self.graveyard or not self.line:
            return False
        left, right = self.left, self.right
        for hand in self.hands:
            for a, b in hand:
                if a == left or a == right or b == left or b == right:
                    return False
        return True

    def open_count(self) -> int:
        """The count of the open ends (D4): a double at an end counts both halves; a one-tile line
        counts both its halves."""
        if not self.line:
            return 0
        if len(self.line) == 1:
            a, b = self.line[0]
            return a + b
        return (self.left * 2 if self.left_double else self.left) + (
            self.right * 2 if self.right_double else self.right)

    def pips(self) -> list[int]:
        return [sum(a + b for a, b in hand) for hand in self.hands]

    # ------------------------------------------------------------------ moves

    def apply(self, action: Action) -> None:
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        try:
            chosen = legal[legal.index(action)]
        except ValueError:
            raise self._rejection(action) from None
        seat = self.current_player
        assert seat is not None
        self._legal = None
        # The action is counted before it is carried out, so that a hand ending on the capped turn
        # knows not to deal a hand that would never be played (see _end_hand).
        self.turns += 1
        kind = chosen["type"]
        if kind == "play":
            self._play(seat, chosen)
        elif kind == "draw":
            self._draw(seat)
        else:
            self.events.append({"type": "pass", "seat": seat})
            self.current_player = (seat + 1) % self.players
        if self.ended_by is None and self.turns >= self.max_turns:
            self._end_game(EndedBy.TURN_CAP, "turn_cap")

    def _play(self, seat: int, chosen: Action) -> None:
        a, b = chosen["tile"]
        tile = (a, b)
        hand = self.hands[seat]
        hand.remove(tile)
        line = self.line
        end = chosen.get("end")
        if not line:
            line.append(tile)
            self.left, self.right = a, b
            self.left_double = self.right_double = a == b
            self.lead_tile = None
        elif end == "left":
            if a == self.left:
                line.insert(0, (b, a))
                self.left = b
            else:
                line.insert(0, tile)
                self.left = a
            self.left_double = a == b
        else:
            if a == self.right:
                line.append(tile)
                self.right = b
            else:
                line.append((b, a))
                self.right = a
            self.right_double = a == b
        count = self.open_count()
        points = count if count % 5 == 0 else 0
        if points:
            self.scores[seat] += points
        event: dict[str, Any] = {"type": "play", "seat": seat, "tile": [a, b]}
        if end is not None:
            event["end"] = end
        event["ends"] = [self.left, self.right]
        event["count"] = count
        event["points"] = points
        event["score"] = self.scores[seat]
        self.events.append(event)
        if points and self.playoff_hands_left is None and self.scores[seat] >= self.target:
            self._end_game(EndedBy.RULES, "target")
        elif not hand:
            self._end_hand("domino", seat)
        elif not self.graveyard and self._is_blocked():
            self._end_hand("blocked", None)
        else:
            self.current_player = (seat + 1) % self.players

    def _draw(self, seat: int) -> None:
        tile = self.graveyard.pop()
        hand = self.hands[seat]
        hand.append(tile)
        hand.sort(reverse=True)
        self.events.append({"type": "draw", "seat": seat, "graveyard": len(self.graveyard)})
        if not self.graveyard and self._is_blocked():
            self._end_hand("blocked", None)

    # ------------------------------------------------------------------ hands and game end

    def _end_hand(self, how: str, winner: int | None) -> None:
        pips = self.pips()
        n = self.players
        if how == "domino":
            assert winner is not None
            points = [0] * n
            points[winner] = round5(sum(pips) - pips[winner])
            next_starter = winner
        else:
            points = blocked_points(pips)
            low = min(pips)
            if pips.count(low) > 1:
                next_starter = self.leader
            else:
                winner = next_starter = pips.index(low)
        for i in range(n):
            self.scores[i] += points[i]
        self.events.append({"type": "hand_end", "hand": self.hand_number, "how": how, "winner": winner,
                            "pips": pips, "hands": [[[a, b] for a, b in h] for h in self.hands],
                            "points": points, "scores": list(self.scores), "next_starter": next_starter})
        if self.playoff_hands_left is not None:
            self.playoff_hands_left -= 1
            if self.playoff_hands_left == 0:
                self._end_game(EndedBy.RULES, "playoff")
                return
        elif max(self.scores) >= self.target:
            top = max(self.scores)
            tied = [i for i in range(n) if self.scores[i] == top]
            if len(tied) == 1:
                self._end_game(EndedBy.RULES, "target")
                return
            self.playoff_hands_left = n
            self.events.append({"type": "playoff", "tied": tied, "hands": n})
        if self.turns >= self.max_turns:
            # C3: the hand that ended on the capped turn is scored once (above) and the game stops
            # with the hands as they are; no new hand is dealt.
            self._end_game(EndedBy.TURN_CAP, "turn_cap")
            return
        self._start_hand(next_starter)

    def _start_hand(self, starter: int | None) -> None:
        """Deal a new hand (redealing while someone holds 5+ doubles); ``starter`` None = first hand."""
        n = self.players
        self.hand_number += 1
        while True:
            tiles = list(ALL_TILES)
            self.rng.shuffle(tiles)
            hands = [sorted(tiles[i * HAND_SIZE:(i + 1) * HAND_SIZE], reverse=True) for i in range(n)]
            doubles = [sum(1 for a, b in h if a == b) for h in hands]
            heavy = [i for i in range(n) if doubles[i] >= REDEAL_DOUBLES]
            if not heavy:
                break
            self.events.append({"type": "redeal", "hand": self.hand_number, "seats": heavy,
                                "doubles": [doubles[i] for i in heavy]})
        self.hands = hands
        self.graveyard = tiles[n * HAND_SIZE:]
        self.line = []
        self.left = self.right = -1
        self.left_double = self.right_double = False
        lead_tile = None
        if starter is None:
            starter, lead_tile = first_leader(hands)
        self.leader = starter
        self.lead_tile = lead_tile
        self.current_player = starter
        self.events.append({"type": "hand_start", "hand": self.hand_number, "leader": starter,
                            "lead_tile": list(lead_tile) if lead_tile else None,
                            "hand_sizes": [len(h) for h in hands], "graveyard": len(self.graveyard),
                            "scores": list(self.scores), "playoff_hands_left": self.playoff_hands_left})

    def _end_game(self, ended_by: str, reason: str) -> None:
        self.ended_by = ended_by
        self.end_reason = reason
        self.current_player = None
        self._legal = None
        result = self.result()
        self.events.append({"type": "game_end", "ended_by": ended_by, "reason": reason,
                            "scores": result["scores"], "ranking": result["ranking"]})

    def result(self) -> GameResult:
        if self.ended_by is None:
            raise IllegalAction("the game is not over yet")
        if self.ended_by == EndedBy.TURN_CAP:
            # C3: points, then fewer tiles in hand (tiles, not pips); remaining ties are shared.
            keys: list[Any] = [(self.scores[i], -len(self.hands[i])) for i in range(self.players)]
        else:
            keys = list(self.scores)
        return {"ranking": ranking_from_keys(keys), "scores": list(self.scores), "ended_by": self.ended_by}

    # ------------------------------------------------------------------ rejection reasons

    def _rejection(self, action: Any) -> IllegalAction:
        """Why ``action`` is not legal now (only built for rejected actions)."""
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            return InvalidAction('an action is a JSON object with a "type": "play", "draw" or "pass", '
                                 f'e.g. {{"type": "play", "tile": [6, 4], "end": "left"}}; got {action!r}')
        kind = action["type"]
        if kind not in _ACTION_KEYS:
            return InvalidAction(f'unknown action type {kind!r} (expected "play", "draw" or "pass")')
        extra = sorted(set(action) - _ACTION_KEYS[kind])
        if extra:
            return InvalidAction(f"unexpected key {extra[0]!r} in a {kind} action")
        if kind == "play" and "tile" not in action:
            return InvalidAction('a play needs a "tile", e.g. {"type": "play", "tile": [6, 4], "end": "left"}')
        if self.current_player is None:
            return IllegalAction("the game is over")
        seat = self.current_player
        if kind == "play":
            tile = action["tile"]
            if (not isinstance(tile, list) or len(tile) != 2
                    or not all(type(v) is int and 0 <= v <= 6 for v in tile)):
                return InvalidAction(f"a tile is a list of two numbers 0-6, high half first, e.g. [6, 4]; got {tile!r}")
            if tile[0] < tile[1]:
                return InvalidAction(f"write a tile high half first: {[tile[1], tile[0]]}, not {tile}")
            end = action.get("end")
            if "end" in action and end not in ("left", "right"):
                return InvalidAction(f'"end" is "left" or "right", not {end!r}')
            name = tile_text(tile)
            if tuple(tile) not in self.hands[seat]:
                return IllegalAction(f"seat {seat} does not hold {name}")
            if not self.line:
                if end is not None:
                    return IllegalAction(f"{name} leads the hand: the first tile of a hand takes no \"end\"")
                if self.lead_tile is not None:
                    return IllegalAction(f"the first hand is led with {tile_text(self.lead_tile)} by its holder")
            else:
                if end is None:
                    return IllegalAction(f'say at which end {name} goes: "end": "left" or "right"')
                value = self.left if end == "left" else self.right
                if value not in tile:
                    return IllegalAction(f"{name} does not match the {end} end ({value})")
                return IllegalAction(f"both open ends are alike ({self.left} and {self.right}): "
                                     f"{name} is offered once, on the left")
        elif kind == "draw":
            if self.can_play(seat):
                return IllegalAction(f"seat {seat} can play, and a player who can play may not draw")
            if self.players == 4:
                return IllegalAction("there is no graveyard with 4 players: pass")
            return IllegalAction("the graveyard is empty: pass")
        else:
            if self.can_play(seat):
                return IllegalAction(f"seat {seat} can play, and a player who can play may not pass")
            return IllegalAction(f"the graveyard still has {_tiles(len(self.graveyard))}: draw until a tile fits")
        return IllegalAction(f"{action!r} is not a legal action here")

    # ------------------------------------------------------------------ views

    def observation(self, seat: int) -> dict[str, Any]:
        line = self.line
        return {
            "seat": seat,
            "players": self.players,
            "hand_number": self.hand_number,
            "current_player": self.current_player,
            "leader": self.leader,
            "lead_tile": list(self.lead_tile) if self.lead_tile else None,
            "hand": [[a, b] for a, b in self.hands[seat]],
            "line": [[a, b] for a, b in line],
            "ends": [self.left, self.right] if line else None,
            "count": self.open_count(),
            "hand_sizes": [len(h) for h in self.hands],
            "graveyard": len(self.graveyard),
            "scores": list(self.scores),
            "target": self.target,
            "playoff_hands_left": self.playoff_hands_left,
            "turn": self.turns,
            "max_turns": self.max_turns,
        }

    def to_json(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        return {
            "game": "dominoes",
            "version": SNAPSHOT_VERSION,
            "players": self.players,
            "options": dict(self.options),
            "rng": [version, list(internal), gauss],
            "hand_number": self.hand_number,
            "scores": list(self.scores),
            "hands": [[[a, b] for a, b in h] for h in self.hands],
            "graveyard": [[a, b] for a, b in self.graveyard],
            "line": [[a, b] for a, b in self.line],
            "current_player": self.current_player,
            "leader": self.leader,
            "lead_tile": list(self.lead_tile) if self.lead_tile else None,
            "turns": self.turns,
            "playoff_hands_left": self.playoff_hands_left,
            "ended_by": self.ended_by,
            "end_reason": self.end_reason,
            # events are never changed once logged: a copy of each dict is enough
            "events": [dict(e) for e in self.events],
        }

    def render(self) -> str:
        status = (f"game over ({self.end_reason}), ranking {self.result()['ranking']}" if self.ended_by
                  else f"seat {self.current_player} to play")
        playoff = f", play-off: {self.playoff_hands_left} hands left" if self.playoff_hands_left else ""
        lines = [f"All-Fives Dominoes, {self.players} players, hand {self.hand_number}, "
                 f"target {self.target}{playoff}, turn {self.turns}: {status}"]
        if self.line:
            lines.append("line: " + " ".join(f"[{a}|{b}]" for a, b in self.line)
                         + f"   ends {self.left}/{self.right}, count {self.open_count()}")
        else:
            lead = f" with {tile_text(self.lead_tile)}" if self.lead_tile else ""
            lines.append(f"line: empty, seat {self.leader} leads{lead}")
        if self.players < 4:
            lines.append(f"graveyard: {_tiles(len(self.graveyard))}")
        pips = self.pips()
        for i, hand in enumerate(self.hands):
            mark = ">" if i == self.current_player else " "
            tiles = " ".join(tile_text(t) for t in hand) or "-"
            lines.append(f"{mark} seat {i}: {self.scores[i]:>3} pts  {tiles}  ({_tiles(len(hand))}, {pips[i]} pips)")
        return "\n".join(lines)


def first_leader(hands: list[list[Tile]]) -> tuple[int, Tile]:
    """Who leads the first hand and with which tile (D3): 6-6, else the highest double in play,
    else the highest tile (most pips, then higher half)."""
    for d in range(6, -1, -1):
        for seat, hand in enumerate(hands):
            if (d, d) in hand:
                return seat, (d, d)
    best = max((a + b, a, seat) for seat, hand in enumerate(hands) for a, b in hand)
    return best[2], (best[1], best[0] - best[1])


def _tile(value: Any, what: str, oriented: bool = False) -> Tile:
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(type(v) is int and 0 <= v <= 6 for v in value)):
        raise InvalidSnapshot(f"{what}: {value!r} is not a tile (two numbers 0-6)")
    a, b = value
    return (a, b) if oriented or a >= b else (b, a)


def restore(game: Game, data: Mapping[str, Any]) -> DominoesState:
    if not isinstance(data, Mapping) or data.get("game") != "dominoes":
        raise InvalidSnapshot("not a dominoes snapshot (\"game\" is not \"dominoes\")")
    if data.get("version") != SNAPSHOT_VERSION:
        raise InvalidSnapshot(f"snapshot version {data.get('version')!r} is not {SNAPSHOT_VERSION}")
    try:
        players = game.validate_players(data["players"])
        options = game.validate_options(data["options"])
    except ValueError as exc:
        raise InvalidSnapshot(str(exc)) from None
    version, internal, gauss = data["rng"]
    rng = random.Random()
    rng.setstate((version, tuple(internal), gauss))
    state = DominoesState(players, options, rng)
    if len(data["hands"]) != players or len(data["scores"]) != players:
        raise InvalidSnapshot(f"hands and scores must have {players} entries")
    state.hands = [sorted((_tile(t, f"hand {i}") for t in h), reverse=True) for i, h in enumerate(data["hands"])]
    state.graveyard = [_tile(t, "graveyard") for t in data["graveyard"]]
    state.line = [_tile(t, "line", oriented=True) for t in data["line"]]
    if players == 4 and state.graveyard:
        raise InvalidSnapshot("there is no graveyard with 4 players")
    seen = [t for h in state.hands for t in h] + state.graveyard + [(max(t), min(t)) for t in state.line]
    if sorted(seen) != sorted(ALL_TILES):
        missing = sorted(set(ALL_TILES) - set(seen))
        doubled = sorted({t for t in seen if seen.count(t) > 1})
        raise InvalidSnapshot(f"the 28 tiles must each be in exactly one place (missing {missing}, "
                              f"more than once {doubled})")
    for (_, r), (left, _) in zip(state.line, state.line[1:]):
        if r != left:
            raise InvalidSnapshot(f"line tiles do not join: {r} next to {left}")
    if state.line:
        state.left, state.right = state.line[0][0], state.line[-1][1]
        state.left_double = state.line[0][0] == state.line[0][1]
        state.right_double = state.line[-1][0] == state.line[-1][1]
    for s in data["scores"]:
        if type(s) is not int or s < 0:
            raise InvalidSnapshot(f"scores must be integers >= 0, not {s!r}")
    state.scores = list(data["scores"])
    for key in ("hand_number", "turns", "leader"):
        if type(data[key]) is not int or data[key] < 0:
            raise InvalidSnapshot(f"{key} must be an integer >= 0, not {data[key]!r}")
    state.hand_number = data["hand_number"]
    state.turns = data["turns"]
    state.leader = data["leader"]
    state.ended_by = data["ended_by"]
    state.end_reason = data.get("end_reason")
    state.playoff_hands_left = data["playoff_hands_left"]
    state.events = [dict(e) for e in data["events"]]
    current = data["current_player"]
    if state.ended_by not in (None, *EndedBy):
        raise InvalidSnapshot(f"ended_by is null, \"rules\" or \"turn_cap\", not {state.ended_by!r}")
    if (current is None) != (state.ended_by is not None):
        raise InvalidSnapshot("current_player is null exactly when the game has ended")
    if current is not None and not (type(current) is int and 0 <= current < players):
        raise InvalidSnapshot(f"current_player {current!r} is not a seat")
    if not 0 <= state.leader < players:
        raise InvalidSnapshot(f"leader {state.leader!r} is not a seat")
    if state.playoff_hands_left is not None and not (
            type(state.playoff_hands_left) is int and 0 < state.playoff_hands_left <= players):
        raise InvalidSnapshot(f"playoff_hands_left must be null or 1 to {players}")
    state.current_player = current
    lead = data["lead_tile"]
    if lead is not None:
        state.lead_tile = _tile(lead, "lead_tile")
        if state.line or current is None or state.lead_tile not in state.hands[current]:
            raise InvalidSnapshot("lead_tile is only set before the first tile, held by the current player")
    if current is not None and state._is_blocked():
        raise InvalidSnapshot("the hand is blocked (nobody can play or draw) but was not scored")
    if current is not None and not any(state.hands):
        raise InvalidSnapshot("every hand is empty")
    return state


def _tiles(n: int) -> str:
    """``1 tile``, ``3 tiles``."""
    return f"{n} tile" if n == 1 else f"{n} tiles"
