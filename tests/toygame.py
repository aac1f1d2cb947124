"""A tiny game for referee tests: players take 1-3 counters in turn; whoever takes the last one wins.

Each seat also holds a secret number (hidden information, shown only in its own observation).
With one counter left the only legal action is ``take 1``, which exercises ruling C2. Its
sampler re-draws the secrets a seat cannot see (for harness.games.testing.check_observations).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from harness.games.base import Game, IllegalAction, InvalidAction, InvalidSnapshot, State, int_option


class ToyState(State):
    def __init__(self, players: int, pile: int, secrets: list[int], max_turns: int) -> None:
        self.players = players
        self.pile = pile
        self.secrets = secrets
        self.max_turns = max_turns
        self.turn = 0
        self.winner: int | None = None
        self.current_player = 0
        self.events = [{"type": "deal", "pile": pile}]

    def legal_actions(self) -> list[dict[str, Any]]:
        if self.current_player is None:
            return []
        return [{"type": "take", "n": n} for n in range(1, min(3, self.pile) + 1)]

    def apply(self, action: dict[str, Any]) -> None:
        if not isinstance(action, dict) or action.get("type") != "take" or type(action.get("n")) is not int:
            raise InvalidAction(f"not a take action: {action!r}")
        if action not in self.legal_actions():
            raise IllegalAction(f"cannot take {action['n']} from {self.pile}")
        seat = self.current_player
        self.pile -= action["n"]
        self.turn += 1
        self.events.append({"type": "take", "seat": seat, "n": action["n"]})
        if self.pile == 0:
            self.winner = seat
            self.current_player = None
        elif self.turn >= self.max_turns:
            self.current_player = None
        else:
            self.current_player = (seat + 1) % self.players

    def observation(self, seat: int) -> dict[str, Any]:
        return {"seat": seat, "players": self.players, "pile": self.pile, "secret": self.secrets[seat],
                "turn": self.turn}

    def is_terminal(self) -> bool:
        return self.current_player is None

    def result(self) -> dict[str, Any]:
        if self.winner is None:
            return {"ranking": [0] * self.players, "scores": [0] * self.players, "ended_by": "turn_cap"}
        return {"ranking": [0 if s == self.winner else 1 for s in range(self.players)],
                "scores": [1 if s == self.winner else 0 for s in range(self.players)], "ended_by": "rules"}

    def to_json(self) -> dict[str, Any]:
        return {"players": self.players, "pile": self.pile, "secrets": list(self.secrets), "turn": self.turn,
                "max_turns": self.max_turns, "winner": self.winner, "current_player": self.current_player,
                "events": list(self.events)}

    def render(self) -> str:
        return f"pile {self.pile}, turn {self.turn}, to move {self.current_player}"


class ToyGame(Game):
    name = "toy"
    min_players = 2
    max_players = 4
    option_list = (int_option("pile", 21, 1, 10_000, "Counters at the start."),
                   int_option("max_turns", 1000, 1, 100_000, "Turn cap."))

    def new_state(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> ToyState:
        options = self.validate_options(options)
        self.validate_players(players)
        rng = random.Random(seed)
        return ToyState(players, options["pile"], [rng.randrange(100) for _ in range(players)],
                        options["max_turns"])

    def state_from_json(self, data: Mapping[str, Any]) -> ToyState:
        try:
            s = ToyState(data["players"], data["pile"], list(data["secrets"]), data["max_turns"])
            s.turn, s.winner, s.current_player = data["turn"], data["winner"], data["current_player"]
            s.events = list(data["events"])
        except (KeyError, TypeError) as exc:
            raise InvalidSnapshot(str(exc)) from None
        return s

    def format_action(self, action: dict[str, Any]) -> str:
        return f"take{action['n']}"

    def sampler(self) -> Any:
        return toy_sampler

    def parse_action(self, text: str) -> dict[str, Any]:
        if not text.startswith("take") or not text[4:].isdigit():
            raise InvalidAction(f"not a take: {text!r}")
        return {"type": "take", "n": int(text[4:])}


def toy_sampler(options: dict[str, Any], observation: Mapping[str, Any], events: Any, rng: random.Random) -> ToyState:
    """A state consistent with what one seat knows: the others' secrets drawn afresh."""
    players, seat = observation["players"], observation["seat"]
    secrets = [observation["secret"] if s == seat else rng.randrange(100) for s in range(players)]
    state = ToyState(players, observation["pile"], secrets, options["max_turns"])
    state.turn = observation["turn"]
    state.events = [dict(e) for e in events]
    last = state.events[-1] if len(state.events) > 1 else None
    if state.pile == 0:
        state.winner, state.current_player = (last["seat"] if last else None), None
    elif state.turn >= state.max_turns:
        state.current_player = None
    else:
        state.current_player = state.turn % players
    return state
