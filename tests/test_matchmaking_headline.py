"""The matchmaking headline's statistics (bench/matchmaking_headline.py): the rung a schedule
stays at 95% from, the first rung at 95%, and their ratio with a bootstrap interval over
leagues, on hand-made ladders whose answers are known."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def _bench_module():
    spec = importlib.util.spec_from_file_location("matchmaking_headline", REPO / "bench" / "matchmaking_headline.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["matchmaking_headline"] = module
    spec.loader.exec_module(module)
    return module


headline = _bench_module()
RUNGS = [1_000, 2_000, 4_000, 8_000]


def _ladder(shares: list[float], leagues: int = 40) -> np.ndarray:
    """leagues x rungs: the first round(share * leagues) leagues right at each rung."""
    return np.array([[i < round(s * leagues) for s in shares] for i in range(leagues)])


def test_a_late_dip_moves_the_rung_it_stays_from_but_not_the_first():
    dipping = _ladder([0.90, 0.95, 0.925, 1.0])  # one league wrong too many at 4,000 games
    assert headline.first_at(RUNGS, dipping) == 2_000
    assert headline.stays_from(RUNGS, dipping) == 8_000
    assert headline.first_at(RUNGS, _ladder([0.5, 0.6, 0.7, 0.9])) is None


def test_the_ratio_and_its_bootstrap_interval():
    adaptive, uniform = _ladder([0.96, 1.0, 1.0, 1.0]), _ladder([0.5, 0.8, 0.97, 1.0])
    ratio, low, high, usable = headline.bootstrap_ratio(RUNGS, adaptive, uniform, draws=300)
    assert ratio == 1_000 / 4_000 and usable > 0 and low is not None and high is not None
    assert low <= ratio <= high
    first, *_ = headline.bootstrap_ratio(RUNGS, adaptive, uniform, draws=50, rule="first")
    assert first == 1_000 / 4_000
    # the headline lines carry both ratios and the gap line
    results = {"adaptive": [[(bool(c), False) for c in row] for row in adaptive],
               "uniform": [[(bool(c), False) for c in row] for row in uniform]}
    lines = headline.headline_lines(RUNGS, results, [0.1] * 40, 200, 25.0, 25 / 3, 25 / 6)
    assert "0.250" in lines[0] and "first rung at 95%" in lines[1] and "10th/11th gap" in lines[2]


def test_uniform_run_further_than_adaptive_gives_a_ratio():
    """Uniform short of 95% on adaptive's ladder (a bound only), at 95% from 32,000 games on its
    own longer ladder: the ratio is adaptive's rung over uniform's on its own ladder, with an
    interval from resamples where both reached 95%."""
    adaptive = _ladder([0.96, 1.0, 1.0, 1.0])
    longer = RUNGS + [16_000, 32_000, 64_000]
    uniform = _ladder([0.5, 0.7, 0.8, 0.9, 0.93, 0.97, 1.0])
    assert headline.bootstrap_ratio(RUNGS, adaptive, uniform[:, :4], draws=50)[0] is None
    ratio, low, high, usable = headline.bootstrap_ratio(RUNGS, adaptive, uniform, draws=300, uniform_rungs=longer)
    assert ratio == 1_000 / 32_000 and usable > 0 and low is not None and high is not None and low <= ratio <= high
