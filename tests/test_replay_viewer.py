"""The replay viewer in a real browser (headless Debian Chromium via Selenium), on leagues played
by real bot processes: the dominoes snake drawn so that touching halves match on every row,
wrapped ones included (pips counted in the drawing); the count and each move's points as the
engine scored them; `#move=` followed by back and forward and loaded at that move; play and
pause; a forfeited seat marked; a bot's stderr for its move, shown as text; the spectator's view
shows every hand and a seat's view hides the others; Crisps and Epizodiak drawn as cards and
the dial. Screenshots go to $TABLEBOTS_SCREENSHOTS when set (else the test's tmp dir)."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from selenium.webdriver.common.by import By

from harness.cli import cli

REPO = Path(__file__).resolve().parent.parent
BOTS = REPO / "bots"
TEST_BOTS = REPO / "tests" / "bots"


@pytest.fixture(scope="module")
def downloads(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser_window() -> str:
    return "1400,1100"


@pytest.fixture(scope="module")
def browser_prefs(downloads: Path) -> dict[str, object]:
    return {"download.default_directory": str(downloads), "download.prompt_for_download": False}


def shoot(browser, tmp_path: Path, name: str) -> None:
    where = Path(os.environ.get("TABLEBOTS_SCREENSHOTS", tmp_path))
    where.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(where / f"{name}.png"))


def _site(tmp: Path, name: str, game: str, bots: list[tuple[str, str]], extra: str = "") -> Path:
    config = tmp / f"{name}.yaml"
    lines = "".join(f"  - {{name: {n}, command: {c}}}\n" for n, c in bots)
    config.write_text(f"name: {name}\ngame: {game}\n{extra}bots:\n{lines}")
    result = CliRunner().invoke(cli, ["run", str(config), "--quiet"])
    assert result.exit_code == 0, result.output
    out = tmp / f"site-{name}"
    result = CliRunner().invoke(cli, ["report", str(config), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def dominoes_site(tmp_path_factory) -> Path:
    """Dominoes at 2 and 3 players: greedy, a bot that writes stderr at every move, and a bot whose
    illegal answers make it forfeit (strikes: 1). Three rounds: the deals come from the store's
    random secret, and a test needs a game that ended at a hand's end (one round sometimes had none)."""
    py = sys.executable
    return _site(tmp_path_factory.mktemp("dom"), "dom", "dominoes",
                 [("greedy", f"{py} {BOTS}/dominoes_greedy.py"), ("chatty", f"{py} {TEST_BOTS}/chatty.py 3"),
                  ("bad", f"{py} {TEST_BOTS}/misbehave.py illegal --at 3 --times 5")],
                 "players: [2, 3]\noptions: {target: 100}\npolicy: strikes\nstrikes: 1\nrounds: 3\n")


def _data(browser) -> dict[str, Any]:
    return json.loads(browser.execute_script("return document.getElementById('replay-data').textContent"))


def _goto(browser, move: int) -> None:
    browser.execute_script(f"location.hash = 'move={move}'")
    label = browser.find_element(By.ID, "move-label")
    deadline = time.monotonic() + 5
    while not label.text.startswith(f"move {move} /") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert label.text.startswith(f"move {move} /"), label.text


def _label(browser) -> str:
    return browser.find_element(By.ID, "move-label").text


# the drawn snake: per tile, its row, and per half its pip count and centre, read from the SVG
_SNAKE_JS = """
return [...document.querySelectorAll('#picture g.domino')].map(g => ({
  row: Number(g.dataset.row), k: Number(g.dataset.k),
  halves: [...g.querySelectorAll('g.half')].map(h => {
    const b = h.getBBox(); return {pips: h.querySelectorAll('circle').length, x: b.x + b.width / 2, y: b.y + b.height / 2};
  })}));
"""


def _read_snake(tiles: list[dict[str, Any]]) -> list[list[int]]:
    """The tiles in line order as drawn, each [outer-left-in-reading-order, next]: a row is read in
    its own direction (left to right, then right to left), so each tile's halves are read in the
    order the snake passes them."""
    rows: dict[int, list[dict[str, Any]]] = {}
    for t in tiles:
        rows.setdefault(t["row"], []).append(t)
    read: list[list[int]] = []
    for r in sorted(rows):
        rtl = r % 2 == 1
        for t in sorted(rows[r], key=lambda t: t["halves"][0]["x"], reverse=rtl):
            a, b = t["halves"]
            if a["x"] == b["x"]:  # a double lies crosswise: both halves alike
                read.append([a["pips"], b["pips"]])
            else:
                first, second = sorted((a, b), key=lambda h: h["x"], reverse=rtl)
                read.append([first["pips"], second["pips"]])
    return read


def test_the_snake_matches_half_to_half_on_every_row_wrapped_ones_too(browser, dominoes_site, tmp_path):
    wrapped = 0
    for checked, page in enumerate(sorted((dominoes_site / "games").glob("*.html"))):
        if wrapped >= 3 and checked >= 6:
            break  # enough lines seen, wrapped ones among them: each page costs a browser load
        browser.get(page.as_uri())
        frames = _data(browser)["frames"]
        longest = sorted(range(len(frames)), key=lambda i: -len(frames[i]["snapshot"]["line"]))[:3]
        for i in longest:
            _goto(browser, i)
            if any(e["type"] == "hand_end" for e in frames[i]["events"]):
                continue  # drawn as the hand ended (checked below)
            line = frames[i]["snapshot"]["line"]
            tiles = browser.execute_script(_SNAKE_JS)
            read = _read_snake(tiles)
            assert read == line, (page.stem, i)  # every touching pair of halves shows the same number
            for left, right in zip(read, read[1:]):
                assert left[1] == right[0]
            if len({t["row"] for t in tiles}) > 1:
                wrapped += 1
                if wrapped == 1:
                    shoot(browser, tmp_path, "dominoes-wrapped")
    assert wrapped >= 2, "the league must have lines long enough to wrap"


def test_the_count_and_each_moves_points_are_shown_as_scored(browser, dominoes_site):
    page = sorted((dominoes_site / "games").glob("*.html"))[0]
    browser.get(page.as_uri())
    frames = _data(browser)["frames"]
    scored = 0
    for i, f in enumerate(frames):
        play = next((e for e in f["events"] if e["type"] == "play"), None)
        if play is None or any(e["type"] == "hand_end" for e in f["events"]):
            continue
        if not (play["points"] or i % 7 == 0):
            continue  # every scoring move, and a sample of the others
        _goto(browser, i)
        count = browser.find_element(By.ID, "count")
        assert count.get_attribute("data-count") == str(play["count"])
        assert count.text.startswith(f"count {play['count']}")
        laid = [g.get_attribute("data-laid-by") for g in browser.find_elements(By.CSS_SELECTOR, "#picture g.domino")
                if sorted(map(int, g.get_attribute("data-tile").split("-"))) == sorted(play["tile"])]
        assert laid == [str(play["seat"])]  # the tile is marked with the seat that laid it
        shown = browser.find_element(By.ID, "move-points")
        assert shown.get_attribute("data-points") == str(play["points"])
        panel = browser.find_element(By.ID, "move-panel").text
        if play["points"]:
            scored += 1
            assert f"+{play['points']} points" in shown.text
            assert f"scores {play['points']} points (total {play['score']})" in panel
            item = browser.find_element(By.CSS_SELECTOR, f"#move-list li[data-move='{i}']").text
            assert f"count {play['count']} · scores {play['points']} points" in item
        else:
            assert "no points" in panel
    assert scored >= 2


def _check_rebuilt_end(browser, frames: list[dict[str, Any]], fields: tuple[str, ...]) -> None:
    last = len(frames) - 1
    rebuilt = browser.execute_script(f"return document.getElementById('replay-viewer').viewer.snapshotOf({last})")
    assert rebuilt.get("_ended"), "the last move must end a deal, hand or round"
    for field in fields:
        assert rebuilt[field] == frames[last]["snapshot"][field], field


def test_a_finished_hand_is_drawn_as_it_ended_with_every_hand_shown(browser, dominoes_site):
    for page in sorted((dominoes_site / "games").glob("*.html")):
        browser.get(page.as_uri())
        frames = _data(browser)["frames"]
        ends = [i for i, f in enumerate(frames) if any(e["type"] == "hand_end" for e in f["events"])]
        if ends:
            break
    else:
        pytest.fail("no hand ended in the league")
    i = ends[0]
    end = next(e for e in frames[i]["events"] if e["type"] == "hand_end")
    browser.find_element(By.CSS_SELECTOR, "#view option[value='0']").click()  # a seat's view: hands at a hand's end are public
    _goto(browser, i)
    read = _read_snake(browser.execute_script(_SNAKE_JS))
    assert read and all(a[1] == b[0] for a, b in zip(read, read[1:]))
    assert len(read) == len(frames[i - 1]["snapshot"]["line"]) + sum(e["type"] == "play" for e in frames[i]["events"])
    for seat, hand in enumerate(end["hands"]):
        cell = browser.find_element(By.CSS_SELECTOR, f"#seats-table tr[data-seat='{seat}'] td.hand")
        assert len(cell.find_elements(By.CSS_SELECTOR, "g.domino")) == len(hand)
    assert f"Hand {end['hand']} over" in browser.find_element(By.ID, "move-panel").text
    for page in sorted((dominoes_site / "games").glob("*.html")):  # a game that ended at a hand's end
        browser.get(page.as_uri())
        frames = _data(browser)["frames"]
        if any(e["type"] == "hand_end" for e in frames[-1]["events"]):
            _check_rebuilt_end(browser, frames, ("line", "hands"))
            break
    else:
        pytest.fail("no game ended at a hand's end")


def test_move_in_the_url_follows_back_and_forward_and_loads_there(browser, dominoes_site):
    page = sorted((dominoes_site / "games").glob("*.html"))[0]
    browser.get(page.as_uri() + "#move=5")
    assert _label(browser).startswith("move 5 /")
    browser.find_element(By.ID, "next").click()
    browser.find_element(By.ID, "next").click()
    assert _label(browser).startswith("move 7 /") and browser.current_url.endswith("#move=7")
    browser.back()
    assert _label(browser).startswith("move 6 /") and browser.current_url.endswith("#move=6")
    browser.back()
    assert _label(browser).startswith("move 5 /")
    browser.forward()
    assert _label(browser).startswith("move 6 /")
    browser.find_element(By.CSS_SELECTOR, "#move-list li[data-move='12']").click()  # the move list too
    assert _label(browser).startswith("move 12 /")
    browser.back()
    assert _label(browser).startswith("move 6 /")
    browser.refresh()
    assert _label(browser).startswith("move 6 /")  # a reload stays at the move


@pytest.mark.serial  # it plays for a second and counts the moves shown
def test_play_and_pause(browser, dominoes_site):
    page = sorted((dominoes_site / "games").glob("*.html"))[0]
    browser.get(page.as_uri() + "#move=0")
    browser.find_element(By.CSS_SELECTOR, "#speed option[value='10']").click()
    browser.find_element(By.ID, "play").click()
    time.sleep(1.0)
    browser.find_element(By.ID, "play").click()  # pause
    moved = int(_label(browser).split()[1])
    assert moved >= 3, moved
    time.sleep(0.5)
    assert int(_label(browser).split()[1]) == moved
    assert browser.current_url.endswith(f"#move={moved}")


def test_a_forfeited_seat_is_marked_and_its_view_says_so(browser, dominoes_site, tmp_path):
    for page in sorted((dominoes_site / "games").glob("*.html")):
        browser.get(page.as_uri())
        data = _data(browser)
        if data["forfeits"]:
            break
    else:
        pytest.fail("the bad bot must forfeit a game")
    forfeit = data["forfeits"][0]
    seat, move = forfeit["seat"], forfeit["move"]
    assert data["result"]["forfeited"][seat]
    header = browser.find_element(By.CSS_SELECTOR, "main > p.muted").text
    assert "forfeited" in header
    row = f"#seats-table tr[data-seat='{seat}']"
    _goto(browser, move - 1)
    assert not browser.find_elements(By.CSS_SELECTOR, f"{row} .forfeit")
    _goto(browser, move)
    assert f"forfeited (move {move})" in browser.find_element(By.CSS_SELECTOR, f"{row} .forfeit").text
    assert f"forfeited at move {move}" in browser.find_element(By.ID, "banner").text
    browser.find_element(By.CSS_SELECTOR, f"#view option[value='{seat}']").click()
    _goto(browser, len(data["frames"]) - 1)
    banner = browser.find_element(By.ID, "banner").text
    assert f"forfeited at move {move}" in banner and "sent nothing more" in banner
    # its observation is the last request it was sent: the one whose answer made it forfeit
    observation = browser.find_element(By.ID, "observation").text
    assert observation.startswith(f"request id {data['frames'][move]['asked']} (for move {move})"), observation
    shoot(browser, tmp_path, "dominoes-forfeit-seat-view")


def test_a_bots_stderr_shows_beside_its_move_as_text(browser, dominoes_site):
    for page in sorted((dominoes_site / "games").glob("*.html")):
        browser.get(page.as_uri())
        frames = _data(browser)["frames"]
        chatty = [i for i, f in enumerate(frames) if f.get("stderr")]
        if chatty:
            break
    else:
        pytest.fail("the chatty bot's stderr must be logged with its moves")
    i = chatty[0]
    _goto(browser, i)
    text = browser.find_element(By.CSS_SELECTOR, "#move-panel pre.rv-stderr").text
    assert f"request {frames[i]['request_id']}: choosing" in text
    assert "<b onmouseover=window.pwned=1>thinking</b>" in text  # literally
    assert not browser.find_elements(By.CSS_SELECTOR, "#move-panel b[onmouseover]")
    assert browser.execute_script("return window.pwned") is None


def test_the_spectator_sees_every_hand_and_a_seat_only_its_own(browser, dominoes_site):
    page = sorted((dominoes_site / "games").glob("*.html"))[0]
    browser.get(page.as_uri())
    frames = _data(browser)["frames"]
    i = next(i for i in range(len(frames) // 2, len(frames))
             if not any(e["type"] == "hand_end" for e in frames[i]["events"]))
    hands = frames[i]["snapshot"]["hands"]

    def shown() -> list[tuple[int, int]]:
        out = []
        for seat in range(len(hands)):
            cell = browser.find_element(By.CSS_SELECTOR, f"#seats-table tr[data-seat='{seat}'] td.hand")
            out.append((len(cell.find_elements(By.CSS_SELECTOR, "g.domino")), len(cell.find_elements(By.CSS_SELECTOR, "svg > rect"))))
        return out

    _goto(browser, i)
    assert shown() == [(len(h), 0) for h in hands]
    browser.find_element(By.CSS_SELECTOR, "#view option[value='1']").click()
    assert shown() == [(len(h), 0) if s == 1 else (0, len(h)) for s, h in enumerate(hands)]
    observation = browser.find_element(By.ID, "observation").get_attribute("textContent")
    assert observation.startswith("request id") or observation == "(not asked yet)"
    browser.find_element(By.CSS_SELECTOR, "#view option[value='-1']").click()
    _goto(browser, len(frames) - 1)  # a finished game: the spectator sees every hand left
    assert shown() == [(len(h), 0) for h in frames[-1]["snapshot"]["hands"]]


@pytest.mark.parametrize("game", ["crisps", "epizodiak"])
def test_crisps_and_epizodiak_are_drawn_as_their_tables(browser, tmp_path_factory, game):
    py = sys.executable
    bots = [("greedy", f"{py} {BOTS}/{game}_greedy.py"), ("r1", f"{py} {BOTS}/random_bot.py --seed 1")]
    if game == "epizodiak":
        bots.append(("r2", f"{py} {BOTS}/random_bot.py --seed 2"))
    site = _site(tmp_path_factory.mktemp(game), game[:3], game, bots, "rounds: 1\n")
    page = sorted((site / "games").glob("*.html"))[0]
    browser.get(page.as_uri())
    frames = _data(browser)["frames"]
    for where, i in (("start", 0), ("middle", len(frames) // 2), ("end", len(frames) - 1)):
        _goto(browser, i)
        # a move that ends a deal shows the table it left, not the next deal's (its frame's
        # snapshot): the viewer's rebuilt end, checked against the engine's below
        s = browser.execute_script(f"return document.getElementById('replay-viewer').viewer.snapshotOf({i})")
        for seat, hand in enumerate(s["hands"]):
            cell = browser.find_element(By.CSS_SELECTOR, f"#seats-table tr[data-seat='{seat}'] td.hand")
            marks = cell.find_elements(By.CSS_SELECTOR, "g.card" if game == "crisps" else "g.ntile")
            assert [m.get_attribute("data-card" if game == "crisps" else "data-v") for m in marks] == [str(x) for x in hand]
        if game == "epizodiak":
            dial = browser.find_elements(By.CSS_SELECTOR, "#picture g.ntile")
            assert [d.get_attribute("data-v") for d in dial[:12]] == [str(v) for v in range(1, 13)]
        else:
            table = s.get("table")
            if table and s["phase"] == "play":  # the play to beat is the trick's last play
                drawn = browser.find_elements(By.CSS_SELECTOR, "#picture g.card:not(.back)")
                assert [c.get_attribute("data-card") for c in drawn][-len(table["cards"]) - (1 if s["offer"] else 0):][
                    :len(table["cards"])] == table["cards"]
        assert browser.find_element(By.ID, "move-list").find_elements(By.TAG_NAME, "li")
        shoot(browser, tmp_path_factory.getbasetemp(), f"{game}-{where}")
    if game == "crisps":  # a move that ends a deal shows its trick, not the next deal's empty table
        i = next(i for i, f in enumerate(frames) if [e["type"] for e in f["events"]][-2:] == ["deal_end", "deal"])
        _goto(browser, i)
        play = next(e for e in frames[i]["events"] if e["type"] == "play")
        drawn = [c.get_attribute("data-card") for c in browser.find_elements(By.CSS_SELECTOR, "#picture g.card:not(.back)")]
        offer = 1 if browser.execute_script(f"return document.getElementById('replay-viewer').viewer.snapshotOf({i}).offer") else 0
        assert drawn[len(drawn) - offer - len(play["cards"]):len(drawn) - offer] == play["cards"]
        assert "the deal is over" in browser.find_element(By.ID, "picture").text
    # the last move ends the last deal (or round) with no new deal: the engine's own position
    # there checks the table the viewer rebuilds for every move that ends a deal
    _check_rebuilt_end(browser, frames, {"crisps": ("hands", "played"), "epizodiak": ("dial", "hands", "sets")}[game])
    assert not [x for x in browser.get_log("browser") if x["level"] == "SEVERE"]


def test_another_page_embeds_the_viewer(browser, dominoes_site, tmp_path):
    """The contest site's way: the viewer alone (replay_viewer_html) inside a page of its own."""
    from harness.league.config import load_config
    from harness.league.store import LeagueStore
    from harness.report.html import ReportPages, replay_viewer_html
    from harness.report.replay_data import game_replay

    cfg = load_config(dominoes_site.parent / "dom.yaml", strict=False)
    with LeagueStore(cfg.store, create=False) as store:
        row = store.db.execute("SELECT id, seq FROM games WHERE status = 'done' ORDER BY seq LIMIT 1").fetchone()
        game = store.game(row[0])
        site = ReportPages(cfg, store)
        replay = game_replay(site.engine, cfg.options, game, store.game_seats(row[1]), store.game_log(row[1]),
                             store.violations(game_seq=row[1]))
    page = tmp_path / "embedded.html"
    page.write_text("<!doctype html><html><head><meta charset='utf-8'><title>contest</title></head><body>"
                    "<h1>A contest's page</h1>" + replay_viewer_html(replay, start_move=3) + "</body></html>")
    browser.get(page.as_uri())
    assert _label(browser) == f"move 3 / {len(replay['frames']) - 1}"
    assert browser.find_elements(By.CSS_SELECTOR, "#picture g.domino")
    browser.find_element(By.ID, "next").click()
    assert _label(browser).startswith("move 4 /") and browser.current_url.endswith("#move=4")
    assert not [x for x in browser.get_log("browser") if x["level"] == "SEVERE"]


def test_a_seat_view_hides_what_other_seats_were_offered_and_wrote(browser, dominoes_site):
    for page in sorted((dominoes_site / "games").glob("*.html")):
        browser.get(page.as_uri())
        frames = _data(browser)["frames"]
        chatty = [i for i, f in enumerate(frames) if f.get("stderr") and len(f["offered"]) > 1]
        if chatty:
            break
    else:
        pytest.fail("the chatty bot must write stderr at a move with a choice")
    i = chatty[0]
    mover = frames[i]["seat"]
    other = next(s for s in range(len(_data(browser)["seats"])) if s != mover)
    _goto(browser, i)
    assert browser.find_elements(By.CSS_SELECTOR, "#move-panel pre.rv-stderr")  # the spectator sees all
    assert browser.find_elements(By.CSS_SELECTOR, "#move-panel ul.offered")
    browser.find_element(By.CSS_SELECTOR, f"#view option[value='{other}']").click()
    assert not browser.find_elements(By.CSS_SELECTOR, "#move-panel pre.rv-stderr")
    assert not browser.find_elements(By.CSS_SELECTOR, "#move-panel ul.offered")  # they would show the mover's tiles
    browser.find_element(By.CSS_SELECTOR, f"#view option[value='{mover}']").click()
    assert browser.find_elements(By.CSS_SELECTOR, "#move-panel pre.rv-stderr")


def test_a_game_without_a_picture_is_shown_as_readable_text(browser, dominoes_site, tmp_path):
    """A plug-in game: its engine's text picture when the data has one (else the position written
    out), a seat's observation written out, its events as words, no script error."""
    from harness.league.config import load_config
    from harness.league.store import LeagueStore
    from harness.report.html import ReportPages, replay_viewer_html
    from harness.report.replay_data import game_replay

    cfg = load_config(dominoes_site.parent / "dom.yaml", strict=False)
    with LeagueStore(cfg.store, create=False) as store:
        row = store.db.execute("SELECT id, seq FROM games WHERE status = 'done' ORDER BY seq LIMIT 1").fetchone()
        replay = game_replay(ReportPages(cfg, store).engine, cfg.options, store.game(row[0]), store.game_seats(row[1]),
                             store.game_log(row[1]), store.violations(game_seq=row[1]))
    replay["game"] = "plugin"
    for n, frame in enumerate(replay["frames"]):
        frame["snapshot"].pop("hands")
        if n % 2:
            frame["text"] = f"the plug-in's own picture of move {n}"
    page = tmp_path / "plugin.html"
    page.write_text("<!doctype html><meta charset='utf-8'><body>" + replay_viewer_html(replay) + "</body>")
    browser.get(page.as_uri() + "#move=1")
    assert browser.find_element(By.CSS_SELECTOR, "#picture pre.position").text == "the plug-in's own picture of move 1"
    _goto(browser, 2)
    assert "line:" in browser.find_element(By.CSS_SELECTOR, "#picture pre.position").text  # the position written out
    # an event in words, not JSON (a play or a draw: the deal comes from the league's secret)
    panel = browser.find_element(By.ID, "move-panel").text
    assert re.search(r"^(play|draw): seat \d", panel, re.M) and "{" not in panel, panel
    browser.find_element(By.CSS_SELECTOR, "#view option[value='0']").click()
    shown = browser.find_element(By.CSS_SELECTOR, "#picture pre.position").text
    assert "hand:" in shown or "has not been asked" in shown
    assert not [x for x in browser.get_log("browser") if x["level"] == "SEVERE"]


def test_a_game_without_a_log_is_one_line_without_the_viewers_script():
    from harness.report.html import replay_viewer_html

    html = replay_viewer_html({"game": "dominoes", "seats": ["a@1", "b@1"], "frames": [], "result": {}})
    assert "No log is stored for this game" in html
    assert "<script" not in html and len(html) < 1000  # a big league lists thousands of such games


def test_the_replay_data_downloads_as_json(browser, dominoes_site, downloads):
    page = sorted((dominoes_site / "games").glob("*.html"))[0]
    browser.get(page.as_uri())
    browser.find_element(By.ID, "download").click()
    target = downloads / f"{page.stem}.json"
    wait = time.monotonic() + 10
    while not target.exists() and time.monotonic() < wait:
        time.sleep(0.1)
    assert json.loads(target.read_text()) == _data(browser)
