"""Engine speed for the ISMCTS bots: iterations and full playouts per 100 ms, per game.

    python bench/ismcts.py [--seconds 2]

For each game, from positions early in several seeded games (the deciding seat's view): the
cost of one ``resample_from_infostate``, the number of full playouts (a sample plus uniformly
random moves to the end of the game) per 100 ms, and the number of ISMCTS iterations per
100 ms as the bots run them (with their playout horizon: end of the deal, hand or round).
All three are measured side by side in one run, so their ratios hold on a loaded machine
even when the absolute figures do not.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from harness.games import get_game
from harness.sdk.ismcts import search

PLAYERS = {"crisps": 2, "dominoes": 2, "epizodiak": 3}


def positions(game_name: str, count: int) -> list:
    """(state, seat) a few random moves into ``count`` seeded games."""
    game = get_game(game_name)
    rng = random.Random(0)
    out = []
    for seed in range(count):
        state = game.new_state(PLAYERS[game_name], seed)
        for _ in range(rng.randrange(0, 6)):
            state.apply(rng.choice(state.legal_actions()))
        while len(state.legal_actions()) < 2:
            state.apply(state.legal_actions()[0])
        out.append((state, state.current_player))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measure and game")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.seconds = 0.05
    print(f"{'game':<10} {'sample us':>10} {'full playouts/100ms':>20} {'decisions/playout':>18} "
          f"{'ISMCTS iterations/100ms':>24}")
    for name in PLAYERS:
        game = get_game(name)
        spots = positions(name, 8)
        rng = random.Random(1)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            state, seat = spots[n % len(spots)]
            game.resample_from_infostate(state.observation(seat), state.events, rng, state.options)
            n += 1
        sample_us = (time.perf_counter() - start) / n * 1e6
        n, moves, start = 0, 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            state, seat = spots[n % len(spots)]
            s = game.resample_from_infostate(state.observation(seat), state.events, rng, state.options)
            while not s.is_terminal():
                s.apply(rng.choice(s.legal_actions()))
                moves += 1
            n += 1
        playouts = n / (time.perf_counter() - start) / 10
        iterations, took = 0, 0.0
        for state, seat in spots:
            t0 = time.perf_counter()
            found = search(game, state.options, state.observation(seat), state.events, state.legal_actions(),
                           PLAYERS[name], rng, deadline=time.monotonic() + args.seconds / len(spots))
            took += time.perf_counter() - t0
            iterations += found.iterations
        print(f"{name:<10} {sample_us:>10.0f} {playouts:>20.0f} {moves / n:>18.0f} {iterations / took / 10:>24.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
