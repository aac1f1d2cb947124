"""How the HTML report scales: a 100,000-game league's report, made and measured in one run.

The league is synthesized straight into a temporary store (finished 2-player games between 20
bots, as bench/league.py part 3 does; no game logs, so its games have no replays to write).
Printed: the time to compute the index's statistics and render it, its size, the bot pages,
and the whole site; then, on a real small league, one replay page's size and time.

Run: python bench/report.py [--games 100000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from league import synthesize  # noqa: E402

from harness.league.store import LeagueStore  # noqa: E402
from harness.report.html import ReportPages, write_report  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.games = 500
    with tempfile.TemporaryDirectory() as tmp:
        store_path = Path(tmp) / "synthetic.sqlite"
        cfg = synthesize(store_path, args.games)
        with LeagueStore(store_path) as store:
            site = ReportPages(cfg, store)
            start = time.perf_counter()
            index = site.index(set())
            took = time.perf_counter() - start
        print(f"index of a {args.games:,}-game league: {took:.1f} s, {len(index.encode()) / 1e3:.0f} KB")
        start = time.perf_counter()
        written = write_report(cfg, Path(tmp) / "site", max_replays=500)
        print(f"whole site: {time.perf_counter() - start:.1f} s, {written['bytes'] / 1e6:.1f} MB "
              f"({written['replays']} games listed with replays; this synthetic league has no logs)")


if __name__ == "__main__":
    main()
