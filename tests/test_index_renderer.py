"""The live index made in the background: a request waits for a fresh render up to a bound, then
gets the last one made; a first render that is slow gives the "being prepared" page; a render
that fails keeps the last good page. Renders are fakes gated by events, so nothing here times
the machine."""

from __future__ import annotations

import threading

from harness.report.live import IndexRenderer


class Gated:
    """A render that waits for its gate (per generation) and records what it rendered."""

    def __init__(self) -> None:
        self.gates: dict[str, threading.Event] = {}
        self.calls: list[str] = []

    def gate(self, generation: str) -> threading.Event:
        return self.gates.setdefault(generation, threading.Event())

    def __call__(self, generation: str) -> str:
        self.calls.append(generation)
        assert self.gate(generation).wait(10)
        if generation == "boom":
            raise RuntimeError("the store went away")
        return f"<main>{generation}</main>"


def test_a_fast_render_is_waited_for_and_cached_per_generation():
    render = Gated()
    renderer = IndexRenderer(render)
    render.gate("1").set()
    assert renderer.page("1", wait=10) == "<main>1</main>"
    assert renderer.page("1", wait=10) == "<main>1</main>"
    assert render.calls == ["1"] and renderer.rendered() == "1"


def test_a_slow_render_gives_the_last_page_at_once_and_the_new_one_when_ready():
    render = Gated()
    renderer = IndexRenderer(render)
    assert renderer.page("1", wait=0.05) is None  # the first render is not ready: the caller says "being prepared"
    render.gate("1").set()
    assert renderer.page("1", wait=10) == "<main>1</main>"
    assert renderer.page("2", wait=0.05) == "<main>1</main>"  # the league moved: the last page, not a wait
    assert renderer.rendered() == "1"
    renderer.kick("3")  # one render at a time: "2" is under way, "3" waits for the next request
    render.gate("2").set()
    assert renderer.page("2", wait=10) == "<main>2</main>"
    assert render.calls == ["1", "2"]
    render.gate("3").set()
    assert renderer.page("3", wait=10) == "<main>3</main>"


def test_a_failing_render_keeps_the_last_good_page_and_is_tried_again(capsys):
    render = Gated()
    renderer = IndexRenderer(render)
    render.gate("1").set()
    assert renderer.page("1", wait=10) == "<main>1</main>"
    render.gate("boom").set()
    assert renderer.page("boom", wait=10) == "<main>1</main>"
    assert "the store went away" in capsys.readouterr().err
    assert renderer.page("boom", wait=10) == "<main>1</main>"
    assert render.calls == ["1", "boom", "boom"]  # tried again on the next request
