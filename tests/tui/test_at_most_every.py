"""AtMostEvery: a view's figures drawn at most once a period, whatever asks."""

from __future__ import annotations

import asyncio
import time

from textual.app import App, ComposeResult

from aclmon.tui.views.base import AtMostEvery, View

PERIOD = 0.2


class Counting(View):
    def __init__(self, on_beat: bool = False) -> None:
        super().__init__()
        self.draws: list[float] = []
        self.every = AtMostEvery(self, PERIOD, self.draw, on_beat=on_beat)

    def draw(self) -> None:
        self.draws.append(time.monotonic())
        self.every.drawn()


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield Counting()


async def test_showing_the_view_while_a_drawing_waits_leaves_no_timer_behind() -> None:
    """Each switch to a view whose drawing waited (flush) used to leave that
    timer running: every one drew once more a period, for ever."""
    app = Host()
    async with app.run_test():
        view = app.query_one(Counting)
        view.every.ask()  # the first drawing: at once
        assert len(view.draws) == 1
        for _ in range(6):  # asked again within the period: waits; the view is shown: drawn
            view.every.ask()
            assert view.every.waiting
            view.every.flush()
            assert not view.every.waiting
        assert len(view.draws) == 7
        await asyncio.sleep(PERIOD * 3)  # every timer those asks set has had its time
        assert len(view.draws) == 7


async def test_asked_on_every_batch_it_draws_once_a_period() -> None:
    app = Host()
    async with app.run_test():
        view = app.query_one(Counting)
        start = time.monotonic()
        for n in range(40):
            view.every.ask()
            if n % 8 == 4:  # a key's drawing now and then
                view.draw()
            await asyncio.sleep(0.025)
        elapsed = time.monotonic() - start
        await asyncio.sleep(PERIOD * 2)
        # whatever the machine's pace: never two timed drawings within one period
        timed = [b - a for a, b in zip(view.draws, view.draws[1:], strict=False)]
        keys = 5
        assert len(view.draws) <= elapsed / PERIOD + 2 + keys
        assert sum(1 for gap in timed if gap < PERIOD * 0.9) <= keys


async def test_a_call_queued_by_a_timer_before_a_drawing_does_not_draw_again() -> None:
    """A timer's callback goes through the view's queue: a drawing that comes in
    between (a key) makes that queued call stale."""
    app = Host()
    async with app.run_test():
        view = app.query_one(Counting)
        view.every.ask()
        view.every.ask()  # waits: timer number 1
        stale = view.every._live
        view.draw()  # a key: drawn now, the timer stopped
        view.every._due(stale)  # what the queue held from that timer
        assert len(view.draws) == 2
        await asyncio.sleep(PERIOD * 2)
        assert len(view.draws) == 2


class Forgetful(View):
    """A view whose drawing does not say it drew (it returns before, or forgets)."""

    def __init__(self) -> None:
        super().__init__()
        self.draws = 0
        self.every = AtMostEvery(self, 60.0, self.draw)

    def draw(self) -> None:
        self.draws += 1


class ForgetfulHost(App[None]):
    def compose(self) -> ComposeResult:
        yield Forgetful()


async def test_a_drawing_that_does_not_call_drawn_is_still_throttled() -> None:
    app = ForgetfulHost()
    async with app.run_test():
        view = app.query_one(Forgetful)
        for _ in range(5):
            view.every.ask()
        # once at once; the rest wait for the (distant) deadline on one timer
        assert view.draws == 1
        assert view.every.waiting
        view.every.flush()  # shown: what waits draws now, once
        assert view.draws == 2
        assert not view.every.waiting
        view.every.flush()
        assert view.draws == 2


class OnBeat(App[None]):
    """A view drawn on the beat, in an app without one."""

    def compose(self) -> ComposeResult:
        yield Counting(on_beat=True)


class Beating(OnBeat):
    beats = True


async def test_on_the_beat_every_drawing_after_the_first_waits_for_the_beat() -> None:
    """What moves on a clock of its own (the host's readings) draws in the beat's
    frame, however long ago its last drawing was; in an app without a beat it
    draws as any other."""
    app = Beating()
    async with app.run_test():
        view = app.query_one(Counting)
        view.every.ask()  # the first drawing: at once
        assert len(view.draws) == 1
        await asyncio.sleep(PERIOD * 1.5)  # its period is over
        view.every.ask()
        assert len(view.draws) == 1 and view.every.waiting
        view.beat()
        assert len(view.draws) == 2 and not view.every.waiting
        view.beat()  # nothing asked since
        assert len(view.draws) == 2
    plain = OnBeat()
    async with plain.run_test():
        view = plain.query_one(Counting)
        view.every.ask()
        await asyncio.sleep(PERIOD * 1.5)
        view.every.ask()
        assert len(view.draws) == 2
