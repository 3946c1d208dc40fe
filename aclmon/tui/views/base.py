"""What every view shares: it draws the store the app hands it."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar, NamedTuple

from rich.console import RenderableType
from rich.text import Text
from textual._context import NoActiveAppError
from textual.containers import Vertical
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from aclmon.store import Store, StoreState
from aclmon.store.sections import SECTIONS as ALL_SECTIONS_ORDERED
from aclmon.tui.vlist import VirtualList


class Command(NamedTuple):
    """One palette entry: its name, what it runs, and what it does in words
    (the same for every entry of a kind, so docs/usage.md's key table shows it);
    ``state`` is how things stand now (shown after ``help`` in the palette)."""

    name: str
    run: Callable[[], object]
    help: str
    state: str = ""

    @property
    def shown_help(self) -> str:
        return f"{self.help} ({self.state})" if self.state else self.help


class View(Vertical):
    """Base of a view. The app calls :meth:`update_from` with the store on the
    refresh timer, only while the view is visible; the view draws again only
    when one of the store's sections it draws (:attr:`SECTIONS`) moved since it
    last drew, and then only those (:meth:`redraw_sections`). It keeps the
    store, so a change of its own state (a reactive) redraws at once with
    :meth:`redraw`. Views never reach into the app: they post messages up."""

    #: the store's sections (:mod:`aclmon.store.sections`) the view draws
    SECTIONS: ClassVar[tuple[str, ...]] = ALL_SECTIONS_ORDERED

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store: Store | None = None
        #: the versions of :attr:`SECTIONS` and the :meth:`content_version` drawn
        #: last (None: draw everything)
        self._drawn: tuple[tuple[int, ...], object] | None = None
        #: what each Static shown through :meth:`show_static` holds: (key, shape)
        self._static_keys: dict[str, tuple[object, object]] = {}
        #: what the view draws at most every so often (:class:`AtMostEvery`)
        self.waiting: list[AtMostEvery] = []
        #: the user's keymap (binding id -> keys), so hints name the keys in use.
        self.keymap: dict[str, str] = {}
        #: keys the app binds itself (a replay's timeline keys): they win over a view's
        self.app_keys: frozenset[str] = frozenset()

    def watch_has_focus(self, _has_focus: bool) -> None:
        """Restyle the view alone when it gains or loses the focus (Textual restyles
        the widget and everything in it: a view's rows, tables and texts, though no
        rule of theirs depends on the view's focus)."""
        try:
            self.app.stylesheet.update_nodes([self], animate=True)
        except NoActiveAppError:
            return
        self.focus_changed()

    def focus_changed(self) -> None:
        """The view gained or lost the focus (:attr:`has_focus` tells which; an
        ``on_focus`` handler runs before Textual sets it): draw what shows it."""

    def key(self, binding_id: str, default: str) -> str:
        """The key a hint should name for a binding: the first remapped one, or ``default``."""
        keys = self.keymap.get(binding_id)
        return keys.split(",")[0] if keys else default

    def focus_target(self) -> Widget:
        """What gets the focus when the view is shown: its first list, else itself."""
        lists = self.query(VirtualList)
        return lists.first() if lists else self

    def update_from(self, store: Store, *, force: bool = False) -> None:
        """Draw what moved in ``store`` since the last time (everything: ``force``,
        or another store, or what the view shows besides the store moved)."""
        drawn = (store.section_versions(self.SECTIONS), self.content_version())
        before = self._drawn
        if store is not self.store or force or before is None or before[1] != drawn[1]:
            self.store, self._drawn = store, drawn
            self._static_keys.clear()
            self.redraw()
            return
        if drawn == before:
            return
        self._drawn = drawn
        moved = zip(self.SECTIONS, drawn[0], before[0], strict=True)
        self.redraw_sections(frozenset(s for s, a, b in moved if a != b))

    def draw_waiting(self) -> None:
        """The view was just shown: what waits for its time draws now."""
        for waiting in self.waiting:
            waiting.flush()

    def beat(self) -> None:
        """The app's once-a-second beat: what was asked for since its last drawing
        draws now (:class:`AtMostEvery`)."""
        for waiting in self.waiting:
            waiting.beat()

    def redraw_sections(self, moved: frozenset[str]) -> None:
        """Draw again what shows these sections of the store (by default: all)."""
        self.redraw()

    def forget_drawn(self) -> None:
        """What the view shows is stale (a resize or a new theme while it was
        hidden): the next :meth:`update_from` draws everything."""
        self._drawn = None
        self._static_keys.clear()

    def show_static(
        self, static: Static, content: RenderableType, key: object, shape: object
    ) -> bool:
        """:func:`show_static` with what the view's Statics hold (forgotten with
        :meth:`forget_drawn`)."""
        return show_static(static, content, key, shape, self._static_keys)

    @property
    def width(self) -> int:
        """Columns to fit: the view's own once laid out, else the screen's."""
        # container_size is what the last layout left inside the view (its size
        # less padding and border, as ``size``); ``size`` asks the screen for the
        # view's region each time, which costs more than drawing a short line
        return self.container_size.width or self.app.size.width or 160

    def redraw(self) -> None:
        """Draw from ``self.store`` (nothing before the first store)."""
        raise NotImplementedError

    def content_version(self) -> object:
        """What the view shows besides the store, as a value that changes with it
        (a compare's table): the app repaints when it or the store's version moved."""
        return None

    def tab_count(self, state: StoreState) -> str:
        """What the view's tab shows after its title (a count, a mark), or ""."""
        return ""

    def palette_commands(self, store: Store) -> list[Command]:
        """The view's own palette entries; the palette shows the view before running one."""
        return []


def text_key(text: Text) -> tuple[object, ...]:
    """What a Text is drawn from (its ``==`` leaves its own style out)."""
    return (text.plain, text.spans, text.style)


def text_shape(text: Text, width: int) -> tuple[int, int]:
    """What the height of a Text drawn ``width`` wide follows: its lines, and
    (unless it is never wrapped) its length in widths."""
    return (text.plain.count("\n"), 0 if text.no_wrap else len(text.plain) // max(width, 1))


def show_static(
    static: Static,
    content: RenderableType,
    key: object,
    shape: object,
    drawn: dict[str, tuple[object, object]],
) -> bool:
    """Put ``content`` in ``static`` unless what it shows has the same ``key``
    (what the content is drawn from; ``drawn`` holds it per Static); a layout of
    the screen only when its ``shape`` (what its height follows: its lines)
    changes. True when updated."""
    name = static.id or str(id(static))
    before = drawn.get(name)
    if before is not None and before[0] == key:
        return False
    drawn[name] = (key, shape)
    static.update(content, layout=before is None or before[1] != shape)
    return True


def show_text(static: Static, text: Text, drawn: dict[str, tuple[object, object]]) -> bool:
    """:func:`show_static` for a Text: drawn again when its text or styles changed,
    laid out when its lines did (or its length in widths, if it wraps)."""
    width = static.size.width or static.app.size.width
    return show_static(static, text, text_key(text), text_shape(text, width), drawn)


class AtMostEvery:
    """Draws something whose figures move with every batch (the Devices trees, a
    following timeline) at most every ``seconds``: a drawing asked for sooner
    waits on a timer of ``view``'s, once. A key draws at once, through ``draw``
    and :meth:`drawn`; so does showing the view (:meth:`View.draw_waiting`).

    In an app that beats (``app.beats``: :class:`~aclmon.tui.app.AclmonApp` ticks
    and, once a second, beats), a drawing asked for sooner waits for the beat
    instead (:meth:`beat`): the header's figures, the tab counts and every view's
    waiting drawing then change in the same tick, which is one frame of the
    screen, not one for each of them a second.

    At most one timer is ever live: a Textual timer hands its callback to the
    view's queue when it fires, where stopping the timer no longer reaches it, so
    each timer carries a number and only the newest one's call draws. (Without
    that, a drawing that came between a timer firing and its queued call, or a
    view shown while a timer waited, left a stale timer behind, and every such
    one drew once more a period: three drawings a second after a few switches.)
    """

    def __init__(
        self,
        view: View,
        seconds: float,
        draw: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        *,
        on_beat: bool = False,
    ) -> None:
        self._widget, self._seconds, self._draw, self._clock = view, seconds, draw, clock
        #: in an app that beats, every drawing after the first waits for the beat,
        #: however old the last one is: what moves once a second on a clock of its
        #: own (the host's readings) would otherwise draw a frame between two beats
        self._on_beat = on_beat
        self._drawn_at = -seconds
        self._has_drawn = False
        self._timer: Timer | None = None
        #: asked for within the period, in an app that beats: drawn on its beat
        self._asked = False
        #: the number of the timer whose call may draw (any other call is stale)
        self._live = 0
        view.waiting.append(self)

    @property
    def waiting(self) -> bool:
        """A drawing waits for its time."""
        return self._timer is not None or self._asked

    def ask(self) -> None:
        """Draw now if the last drawing is ``seconds`` old, else when it is (on the
        app's beat, if it beats)."""
        wait = self._seconds - (self._clock() - self._drawn_at)
        beats = getattr(self._widget.app, "beats", False)
        if beats and (wait > 0 or (self._on_beat and self._has_drawn)):
            self._asked = True
        elif wait <= 0:
            self._draw_now()
        elif self._timer is None:
            self._live += 1
            self._timer = self._widget.set_timer(wait, partial(self._due, self._live))

    def drawn(self) -> None:
        """It was drawn now (whoever asked): the next waits ``seconds`` from here."""
        self._drawn_at = self._clock()
        self._has_drawn = True
        self._cancel()

    def beat(self) -> None:
        """The app's beat: a drawing asked for since the last one is drawn now."""
        if self._asked and self._widget.is_mounted:
            self._draw_now()

    def flush(self) -> None:
        """What waits is drawn now (the view was just shown)."""
        if not self.waiting:
            return
        if self._widget.is_mounted:
            self._draw_now()  # which cancels the timer (drawn)
        else:
            self._cancel()

    def _cancel(self) -> None:
        self._asked = False
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._live += 1  # a call already queued by a timer that fired is stale now

    def _due(self, number: int) -> None:
        if number != self._live:
            return
        self._timer = None
        if self._widget.is_mounted:
            self._draw_now()

    def _draw_now(self) -> None:
        # Recorded here, not only by ``draw``'s own :meth:`drawn`: a ``draw`` that
        # returns before it (nothing to draw yet) or never calls it left the
        # period unrecorded and any waiting timer live, so every ask drew at once
        # and the timer drew the same again at its deadline.
        self.drawn()
        self._draw()
