"""A store belongs to the config file that made it: a copied config that kept the name is
refused (its bots never join the original's league), a moved checkout or a renamed config goes
on, and `harness run --claim-store` lets a config take a store over. End to end, real bots."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli

RANDOM = Path(__file__).resolve().parent.parent / "bots" / "random_bot.py"


def invoke(*args: object, code: int = 0) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.output


def league(tmp_path: Path, name: str = "dom", extra: str = "") -> Path:
    leagues = tmp_path / "checkout" / "leagues"
    leagues.mkdir(parents=True, exist_ok=True)
    config = leagues / f"{name}.yaml"
    config.write_text(f"name: dom\ngame: crisps\nrounds: 1\nworkers: 1\nbots:\n"
                      f"  - {{name: a, command: {sys.executable} {RANDOM}}}\n"
                      f"  - {{name: b, command: {sys.executable} {RANDOM} --seed 2}}\n{extra}")
    return config


def games(config: Path) -> int:
    return sum(r["games"] for r in json.loads(invoke("table", config, "--format", "json"))["table"])


def test_a_copied_config_that_kept_the_name_is_refused_and_the_original_is_untouched(tmp_path):
    original = league(tmp_path)
    invoke("run", original, "--no-progress")
    before = games(original)
    copy = original.with_name("mydom.yaml")
    copy.write_text(original.read_text() + f"  - {{name: c, command: {sys.executable} {RANDOM} --seed 3}}\n")
    for command in ("run", "table", "violations"):
        out = invoke(command, copy, code=2)
        assert out.count("\n") == 1, out  # one line
        assert f"holds the league of {original}, not of {copy}" in out
        assert "another `name:` (or a `store:` path)" in out and "--claim-store" in out
    assert games(original) == before
    rows = json.loads(invoke("table", original, "--format", "json"))["table"]
    assert sorted(r["bot"] for r in rows) == ["a", "b"]  # the copy's bot never joined
    copy.write_text(copy.read_text().replace("name: dom", "name: mydom"))  # the way through: its own name
    assert "mydom: played 6 games" in invoke("run", copy, "--no-progress")


def test_a_moved_checkout_and_a_renamed_config_keep_their_league(tmp_path):
    config = league(tmp_path)
    invoke("run", config, "--no-progress")
    moved = tmp_path / "ci-clone"
    shutil.copytree(tmp_path / "checkout", moved)  # the original still exists beside it
    moved_config = moved / "leagues" / "dom.yaml"
    assert games(moved_config) == games(config)
    assert "already played" in invoke("run", moved_config, "--no-progress")
    renamed = config.with_name("dominoes.yaml")
    config.rename(renamed)
    assert "already played" in invoke("run", renamed, "--no-progress")
    store = sqlite3.connect(tmp_path / "checkout" / "leagues" / "runs" / "dom.sqlite")
    assert store.execute("SELECT value FROM meta WHERE key = 'config'").fetchone() == ("../dominoes.yaml",)


def test_claim_store_lets_a_config_take_a_store_over(tmp_path):
    config = league(tmp_path)
    invoke("run", config, "--no-progress")
    other = league(tmp_path, "other")
    invoke("run", other, "--no-progress", code=2)
    assert "already played" in invoke("run", other, "--no-progress", "--claim-store")
    out = invoke("table", config, code=2)
    assert f"holds the league of {other}" in out  # now the first config is the stranger


def test_a_store_made_before_it_recorded_its_config_is_adopted(tmp_path):
    config = league(tmp_path)
    invoke("run", config, "--no-progress")
    path = config.parent / "runs" / "dom.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM meta WHERE key = 'config'")
    assert "already played" in invoke("run", config, "--no-progress")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone() == ("../dom.yaml",)


def test_serve_warns_on_start_and_on_every_page_when_its_config_is_not_the_stores_owner(tmp_path):
    import re
    import signal
    import subprocess
    import time
    import urllib.request

    from harness.league.config import load_config
    from harness.report.serve import make_server

    original = league(tmp_path)
    invoke("run", original, "--no-progress")
    copy = original.with_name("mydom.yaml")
    copy.write_text(original.read_text())  # kept the name: it reaches the original's store
    own = make_server(load_config(str(original)), "127.0.0.1", 0)
    assert own.owner_warning() is None  # the store's own config: nothing to say
    own.server_close()

    harness = str(Path(sys.executable).parent / "harness")
    # SIGINT as a terminal's Ctrl-C: a test run started in the background (a CI script's `&`)
    # ignores it, and a Python started with it ignored never turns it into KeyboardInterrupt
    serve = subprocess.Popen([harness, "serve", str(copy), "--port", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        port = int(re.search(r":(\d+)/", serve.stdout.readline()).group(1))  # it serves: only reading
        warning = serve.stderr.readline()
        assert warning.startswith("warning: ") and f"holds the league of {original}, not of {copy}" in warning
        assert "`harness serve` only reads" in warning

        def get(path: str) -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
                return r.read().decode()

        index = get("/")
        assert re.search(r'<p class="bad" id="owner-warning"[^>]*>warning: \S+ holds the league of ', index)
        deadline = time.monotonic() + 60
        while not re.search(r'href="games/g-', index) and time.monotonic() < deadline:
            time.sleep(0.2)  # the first render is still being made (a loaded machine): the page says so
            index = get("/")
        game = re.search(r'href="(games/g-[0-9a-f]+\.html)"', index).group(1)
        assert 'id="owner-warning"' in get("/" + game)  # every page, not only the index
        assert json.loads(get("/api/status"))["store"] is True  # the API stays JSON
        assert "already played" in invoke("run", copy, "--no-progress", "--claim-store")
        time.sleep(1.2)  # the check stands for a second
        assert 'id="owner-warning"' not in get("/")  # now it is the store's owner
    finally:
        serve.send_signal(signal.SIGINT)
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()  # never left behind serving a deleted store
            serve.wait()
            raise
