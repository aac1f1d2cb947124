"""`harness doctor`: which guarantees of docs/security.md hold on this machine, for this user."""

from __future__ import annotations

import click


@click.command()
def doctor() -> None:
    """Print each guarantee of docs/security.md, whether it holds here (for this machine and the
    user running it), how, and the command that would make it hold.

    Probed for real: bubblewrap is run, a bot's cgroup is made and removed. `harness contest run`
    refuses to rank games without the sandbox and the CPU clock unless given --unsafe.
    """
    from harness.play.doctor import guarantees

    off = 0
    for g in guarantees():
        click.echo(f"{'ok ' if g.holds else 'OFF'}  {g.name}: {g.how}")
        if not g.holds:
            off += 1
            click.echo(f"     to make it hold: {g.fix}")
    click.echo("every guarantee holds here" if not off else f"{off} guarantee(s) do not hold here (docs/security.md)")
