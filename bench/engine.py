"""Engine speed: random-play decisions per second and microseconds per decision, per game.

A decision is what the referee does per move: legal_actions() + observation(current seat)
+ apply(). Target: <= 20 us per decision. Run: python bench/engine.py [--seconds S]
"""

from __future__ import annotations

import argparse
import random
import time

from harness.games import GAMES, get_game


def measure(name: str, players: int, seconds: float) -> tuple[int, int, float]:
    """Play random games for about ``seconds``; return (games, decisions, elapsed)."""
    game = get_game(name)
    chooser = random.Random(0)
    games = decisions = 0
    elapsed = 0.0
    seed = 0
    while elapsed < seconds:
        state = game.new_state(players, seed, {})
        seed += 1
        start = time.perf_counter()
        while not state.is_terminal():
            legal = state.legal_actions()
            state.observation(state.current_player)
            state.apply(legal[chooser.randrange(len(legal))])
            decisions += 1
        elapsed += time.perf_counter() - start
        games += 1
    return games, decisions, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="time per game and table size")
    parser.add_argument("--games", nargs="*", default=list(GAMES), help="games to measure")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.seconds = 0.05
    print(f"{'game':<10} {'players':>7} {'games':>7} {'decisions/s':>12} {'us/decision':>12} {'target':>7}")
    for name in args.games:
        game = get_game(name)
        for players in range(game.min_players, game.max_players + 1):
            games, decisions, elapsed = measure(name, players, args.seconds)
            us = elapsed / decisions * 1e6
            print(f"{name:<10} {players:>7} {games:>7} {decisions / elapsed:>12,.0f} {us:>12.1f} "
                  f"{'ok' if us <= 20 else 'SLOW':>7}")


if __name__ == "__main__":
    main()
