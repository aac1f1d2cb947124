"""`harness collusion`: pairs of bots whose results at shared tables depart from the table's fit."""

from __future__ import annotations

import click

from harness.cli.common import echo
from harness.cli.league import _load_to_read, _open_store, config_argument


@click.command("collusion")
@config_argument
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.001, show_default=True,
              help="The chance that a league of honest bots has any pair flagged (Bonferroni over every pair "
                   "and statistic).")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="How many pairs to list (the flagged ones always are).")
def collusion(config: str, alpha: float, top: int) -> None:
    """Pairs of bots in CONFIG's league whose results at shared tables depart from their records apart.

    For every duplicate set where both sat, each one's result against every other seat is
    compared with their record against that seat in the games the partner did not play: `joint`
    (both gaining against the third seats), `feed` (one gaining what the other loses). A pair is FLAGGED when a z-score passes the Bonferroni bound for --alpha: an
    honest league is flagged with probability about alpha (measured: docs/security.md). A flag
    is a reason to read the pair's games, not a proof. Example:

    \b
        harness collusion leagues/epizodiak.yaml
    """
    from harness.league import queries
    from harness.report.collusion import MIN_SETS, analyse, store_sets, used_bound

    cfg = _load_to_read(config)
    with _open_store(cfg) as store:
        names = {r.id: r.label for r in store.versions()}
        sets = store_sets(queries.done_seats(store))
    findings = analyse(sets, alpha)
    judged = sum(1 for f in findings if f.sets >= MIN_SETS)
    flagged = [f for f in findings if f.flagged]
    if not judged:
        three = sum(1 for s in sets if s and len(s[0]) >= 3)
        echo(f"{len(sets)} duplicate sets, {three} of them at tables of 3 or more: no pair has the "
             f"{MIN_SETS} shared sets at such tables the report needs (collusion shows against a third seat)")
        return
    echo(f"{len(sets)} duplicate sets, {judged} pairs with at least {MIN_SETS} shared sets; flagged at "
         f"|z| > {used_bound(findings):.2f} (alpha {alpha}): {len(flagged)}")
    for f in findings[:max(top, len(flagged))]:
        z = ", ".join(f"{k} {f.z[k]:+.2f}" for k in f.z)
        echo(f"{'FLAGGED ' if f.flagged else ''}{names.get(f.a, f.a)} & {names.get(f.b, f.b)}: {f.sets} sets, z: {z}")
