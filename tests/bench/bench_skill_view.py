"""Catalogue: an endpoint's skill.md drawn, as the operator moves from one endpoint to the next.

The catalogue's detail pane (`EndpointDetail`, 60x38: the right half of a 120x40 terminal) is
shown the sandbox's endpoints in the order of its list, each with its record and its skill.md as
the service writes it, one after the other. A sample runs from the call that shows an endpoint to
the first frame composed once its document is wholly mounted (headless, Textual composes every
frame and hands it to `_display`). What comes before it on screen is not in it: the pause that
lets the cursor rest, and the skill.md's fetch (once per endpoint, then remembered).

Baseline, in the same run and process: the same documents through Textual's `Markdown.update`,
which mounts a new widget for every block of every document (what the pane did before).

    python tests/bench/bench_skill_view.py [--runs N] [--json FILE]
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import harness
from harness import Baseline, BenchResult, Figures, Target

ENDPOINTS = 40
PANE = (60, 38)
TARGET = Target({"median": 33.0})  # two frames at 60 Hz, as the approvals screen's keys


async def _measure(documents: list[tuple[Any, str]], *, textual_update: bool) -> list[float]:
    from textual.app import App, ComposeResult
    from textual.widgets import Markdown

    import svc_console.tui.textual_fixes  # noqa: F401  (in force in the console, as here)
    from svc_console.core.sanitize import inert_markdown
    from svc_console.tui.catalogue.detail import EndpointDetail
    from svc_console.tui.catalogue.skill_view import InertMarkdown
    from svc_console.tui.colors import palette

    class Pane(App[None]):
        CSS = f"EndpointDetail {{ width: {PANE[0]}; height: {PANE[1]}; }}"

        def compose(self) -> ComposeResult:
            yield EndpointDetail()

    app = Pane()
    frames = harness.Frames(app)
    times = []
    async with app.run_test(size=(PANE[0] + 2, PANE[1] + 2)) as pilot:
        detail = app.query_one(EndpointDetail)
        markdown = detail.query_one(InertMarkdown)
        colours = palette(app)
        await pilot.pause()
        for record, text in documents:
            start = time.perf_counter()
            detail.show_record(record, colours)
            if textual_update:
                await Markdown.update(markdown, inert_markdown(text))
                markdown.display = True
            else:
                detail.show_skill(text, colours)
                while markdown.shown != inert_markdown(text):
                    await asyncio.sleep(0.0002)
            frame = await frames.first_after(time.perf_counter())  # once it is mounted
            times.append((frame - start) * 1000)
            await pilot.pause(0.02)
    return times


def run(runs: int) -> list[BenchResult]:
    from svc_console.sandbox.catalog import catalog, skill_markdown

    market = catalog()
    documents = [(e, skill_markdown(e, market.outputs[e.id])) for e in market.endpoints[:ENDPOINTS]]
    kept: list[float] = []
    remounted: list[float] = []
    for _ in range(runs):  # alternating, so both see the machine as it is
        kept += asyncio.run(_measure(documents, textual_update=False))
        remounted += asyncio.run(_measure(documents, textual_update=True))
    return [
        BenchResult(
            name="catalogue: the next endpoint's skill.md drawn",
            unit="ms",
            figures=Figures.of(kept),
            target=TARGET,
            baseline=Baseline(
                "Textual's Markdown.update (every block mounted anew)", Figures.of(remounted)
            ),
            context={"endpoints": ENDPOINTS, "pane": list(PANE)},
        )
    ]


if __name__ == "__main__":
    harness.main(run, default_runs=3)
