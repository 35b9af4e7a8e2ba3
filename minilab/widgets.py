"""ipywidgets panels for the lessons.

Every panel here is made the same way (`Panel`), because the obvious way fails
in a real browser: a plot drawn with `plt.show()` inside `with output:` is
captured by whichever message the kernel is handling at that moment, and in
JupyterLab 9 of 16 redraws after an interaction came out blank or cut to a
strip while another update was being handled. So:

* a plot is a matplotlib `Figure` made without pyplot, rendered to PNG bytes
  with Agg and set as the value of an `ipywidgets.Image` (`Panel.show`);
* text is the value of an `HTML` widget (`Panel.say`).

Both are widget state, not captured output: nothing can land in the wrong
place, a redraw replaces the picture in one message, and the state is saved
with the notebook, so a panel shows (static) before it is run and in the book.

Handlers run through the panel's guard: one at a time (an update asked for
while another runs is done once, after it, with the latest values), a
button click while its handler runs or within a double-click's interval of
its end is dropped (a true double-click queues its second click behind the
first), and an error is one line instead of a traceback. Slow work reports on
a progress bar and a line inside the panel.

Every panel fits a 1366×768 laptop's notebook area (about 650 px high in JupyterLab) and is at most
`MAX_HEIGHT` high; a plot is at most `MAX_PLOT_HEIGHT_PX` tall (`png` renders a taller figure at a lower
dpi) and is shown at its own size, never stretched to the panel's width (tests/browser measure both).
After an error the stale plot is hidden under the ⚠ line, and a long value is never echoed whole.

Classroom mode (`make classroom`, i.e. MINILIB_CLASSROOM=1; `runtime.classroom()`): every panel
answers from what is cached at once, and live training is opt-in. A "train this point" button is
made in one place, `LiveTraining`: in classroom mode it starts disabled beside an "allow live
training" box, and a click without the box ticked trains nothing (tests/test_classroom.py).
"""
from __future__ import annotations

import functools
import html
import io
import random
import textwrap
import time
from typing import Callable, Sequence

import ipywidgets as w
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from minilib import runtime, viz

MAX_HEIGHT = "620px"      # a panel fits a 1366×768 laptop's notebook area (~650 px in JupyterLab)
PLOT_DPI = 100            # figure inches x 100 = pixels of the PNG (a taller figure: fewer dots per inch)
MAX_PLOT_HEIGHT_PX = 360  # every plot here is at most this tall (png; checked by the tests)
MAX_ECHO = 40             # a typed value echoed in a message is cut to this many characters
MAX_MESSAGE = 300         # an error line is cut to this many characters
SEEDS = (0, 99)           # the seeds a "train this point" may ask for; outside, the box says so and clamps
DOUBLE_CLICK_S = 0.5      # a click this soon after the last run ended is the second half of a double-click
WIDE = {"description_width": "initial"}  # a description as wide as its text ("temperature", not "temperat…")


# -- one way to draw, one way to handle an event ------------------------------------------------
def figure(width: float, height: float, ncols: int = 1):
    """A new (Figure, axes) pair, outside pyplot: no global state, nothing flushed by the inline backend."""
    fig = Figure(figsize=(width, height), dpi=PLOT_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, (axes[0] if ncols == 1 else list(axes))


def png(fig: Figure) -> bytes:
    """The figure rendered to PNG bytes by Agg, at PLOT_DPI, or fewer dots per inch if that would make it
    taller than MAX_PLOT_HEIGHT_PX (the whole figure scaled down, as the browser would, but drawn sharp)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=min(PLOT_DPI, MAX_PLOT_HEIGHT_PX / fig.get_figheight()))
    return buf.getvalue()


def clip(value: str, limit: int = MAX_ECHO) -> str:
    """`value` cut to `limit` characters (with "…" and its length), for echoing typed input in a message."""
    value = str(value)
    return value if len(value) <= limit else f"{value[:limit]}… ({len(value):,} characters)"


def token_words(tok, ids) -> list[str]:
    """Each token id as the text it stands for, for a plot's labels: BPE's "Ġthe" is "the", WordPiece's
    "##ing" is "ing", a space alone "␣" and a newline "⏎" (`tok.id_to_token` shows the tokenizer's marks)."""
    words = []
    for i in ids:
        text = tok.decode([int(i)])
        text = text[2:] if text.startswith("##") else text
        words.append(text.strip() or ("⏎" if "\n" in text else "␣"))
    return words


class Panel:
    """What every widget here is made of: its controls, a text area, an optional progress line and
    a plot, in a box at most MAX_HEIGHT high, and the guard its handlers run through.

    `panel.box` is what a lesson displays; `panel.text`, `panel.image`, `panel.bar` and
    `panel.step` are the parts the handlers fill in.
    """

    def __init__(self, controls: Sequence[w.Widget], plot: bool = True, progress: bool = False,
                 text_height: str = "130px"):
        self.text = w.HTML(layout=w.Layout(max_height=text_height, overflow="auto"))
        # align_self: at the PNG's own size; a VBox would stretch it to the panel's width (blurred, too tall)
        self.image = w.Image(format="png", layout=w.Layout(max_width="100%", height="auto", align_self="flex-start")
                             ) if plot else None
        self.bar = w.IntProgress(value=0, min=0, max=1, layout=w.Layout(width="220px")) if progress else None
        self.step = w.HTML() if progress else None
        parts = [*controls, self.text]
        if progress:
            parts.append(w.HBox([self.bar, self.step]))
        if plot:
            parts.append(self.image)
        self.box = w.VBox(parts, layout=w.Layout(max_height=MAX_HEIGHT, overflow="auto"))
        self._busy = False
        self._pending: Callable[[], None] | None = None

    # the parts
    def say(self, *lines: str) -> None:
        """Replace the text area with these lines."""
        body = html.escape("\n".join(lines))
        self.text.value = (f"<pre style='margin:0; white-space:pre-wrap; overflow-wrap:anywhere; "
                           f"line-height:1.35'>{body}</pre>")

    def show(self, fig: Figure) -> None:
        """Replace the plot with this figure (and show it again if an error had hidden it)."""
        self.image.value = png(fig)
        self.image.layout.display = None

    def note(self, line: str) -> None:
        """Say `line` on the progress line (the bar stays where it is); on the text area without one."""
        if self.step is not None:
            self.step.value = html.escape(line)
        else:
            self.say(line)

    def clamp(self, box: w.IntText, lo: int, hi: int, what: str = "seed") -> None:
        """Keep `box` within lo..hi, and say so when it changes a value typed outside (never silently)."""
        def check(change):
            value = change["new"]
            if not lo <= value <= hi:
                kept = min(max(value, lo), hi)
                box.value = kept
                self.note(f"{what} {value} is outside {lo}–{hi}: set to {kept}")
        box.observe(check, names="value")

    def progress(self, done: float, total: float, line: str) -> None:
        """Move the bar to done/total and say what is happening (sent to the browser at once)."""
        self.bar.max = 1000
        self.bar.value = int(1000 * min(max(done / max(total, 1e-9), 0.0), 1.0))
        self.step.value = html.escape(line)

    # the guard
    def _run(self, fn: Callable[[], None]) -> None:
        self._busy = True
        try:
            fn()
        except Exception as exc:  # a widget must never crash in front of a room
            self.say(clip(f"⚠ {type(exc).__name__}: {exc}", MAX_MESSAGE))
            if self.image is not None:  # the old plot would pass for the answer to this input
                self.image.layout.display = "none"
        finally:
            self._busy = False

    def update(self, fn: Callable[[], None]) -> Callable:
        """An observer running `fn`; asked while another handler runs, it runs once afterwards."""
        def handler(*_):
            if self._busy:
                self._pending = fn  # the latest request wins: it reads the widgets' values when it runs
                return
            self._run(fn)
            while self._pending is not None:
                queued, self._pending = self._pending, None
                self._run(queued)
        return handler

    def click(self, button: w.Button, fn: Callable[[], None],
              enabled: Callable[[], bool] = lambda: True) -> Callable:
        """A click handler running `fn` with `button` disabled. A click while it runs, or within
        DOUBLE_CLICK_S of its end (the second click of a double-click waits in the kernel's queue
        until the first is done), is dropped. Afterwards the button is enabled if `enabled()`."""
        last_end = [-float("inf")]

        def handler(_):
            if self._busy or time.monotonic() - last_end[0] < DOUBLE_CLICK_S:
                return
            button.disabled = True
            try:
                self.update(fn)()
            finally:
                button.disabled = not enabled()
                last_end[0] = time.monotonic()
        return handler


class LiveTraining:
    """A panel's "train this point" button: the one way a widget here trains live.

    Outside classroom mode it is the button alone. In classroom mode (`runtime.classroom()`) live
    training is opt-in: the button starts disabled beside an "allow live training" box, and a click
    while the box is unticked trains nothing and says how to enable it (a click can reach the
    handler even when the button is disabled, so the handler checks too).

        live = LiveTraining()
        panel = Panel([w.HBox([..., *live.controls])], progress=True)
        live.on_click(panel, train_point, profile="laptop")
    """

    OPT_IN = "allow live training"

    def __init__(self, description: str = "train this point"):
        self.description = description
        self.button = w.Button(description=description, icon="play", button_style="primary")
        self.opt_in: w.Checkbox | None = None
        if runtime.classroom():
            self.opt_in = w.Checkbox(value=False, description=self.OPT_IN, indent=False,
                                     layout=w.Layout(width="auto", margin="0 0 0 12px"))
            self.button.disabled = True
            self.opt_in.observe(lambda change: setattr(self.button, "disabled", not change["new"]), names="value")
        self.controls: list[w.Widget] = [self.button] + ([self.opt_in] if self.opt_in is not None else [])

    @property
    def allowed(self) -> bool:
        """May a click train now? Always outside classroom mode; in it, only with the box ticked."""
        return self.opt_in is None or bool(self.opt_in.value)

    def hint(self) -> str:
        """What to do to train a point: "press 'train this point'" (first tick the box while it is unticked)."""
        press = f"press '{self.description}'"
        return press if self.allowed else f"tick '{self.OPT_IN}', then {press}"

    def note(self, profile: str) -> str:
        """The panel's progress line in classroom mode, as the box is now: off (the start) or allowed."""
        if self.allowed:
            return (f"classroom mode: live training is allowed — {self.hint()} to train a point at {profile} "
                    f"sizes (minutes on a CPU); untick '{self.OPT_IN}' to turn it off")
        return (f"classroom mode: cached results only; live training is off — tick '{self.OPT_IN}' to train "
                f"a point at {profile} sizes (minutes on a CPU)")

    def on_click(self, panel: Panel, fn: Callable[[], None], profile: str,
                 redraw: Callable[[], None] | None = None) -> None:
        """Run `fn` on a click, through the panel's guard, only while live training is allowed. In classroom
        mode, ticking or unticking the box says so on the progress line at once and runs `redraw` (the
        panel's hints follow the box)."""
        def guarded():
            if not self.allowed:
                panel.progress(0, 1, self.note(profile))
                return
            fn()
        self.button.on_click(panel.click(self.button, guarded, enabled=lambda: self.allowed))
        if self.opt_in is not None:
            def follow():
                panel.progress(0, 1, self.note(profile))
                if redraw is not None:
                    redraw()
            self.opt_in.observe(panel.update(follow), names="value")


def _pre(text: str, width: int = 100) -> str:
    return textwrap.fill(text, width)


# -- chapter 00: the corpora ----------------------------------------------------------------------
def corpus_explorer(load_tokens: Callable[[str], list[str]], names: Sequence[str],
                    sample_words: int = 60, seed: int = 0) -> w.VBox:
    """Pick a corpus → its size, its Zipf plot and a random passage.

    `load_tokens(name)` returns the corpus as one token list; results are cached,
    so a second visit to a corpus is instant.
    """
    load = functools.lru_cache(maxsize=None)(load_tokens)
    picker = w.Dropdown(options=list(names), description="corpus")
    again = w.Button(description="another passage", icon="refresh")
    panel = Panel([w.HBox([picker, again])])
    rng = random.Random(seed)

    loaded: set[str] = set()
    if runtime.classroom():  # every pick must answer at once: load each corpus now, while the cell runs
        for name in names:
            load(name)
            loaded.add(name)

    def draw():
        name = picker.value
        if name not in loaded:
            panel.say(f"loading the {name} corpus (first visit only) …")
        tokens = load(name)
        loaded.add(name)
        counts = viz.rank_frequency(tokens)
        start = rng.randrange(max(1, len(tokens) - sample_words))
        panel.say(f"{name}: {len(tokens):,} tokens, {len(counts):,} distinct words, "
                  f"{(counts == 1).sum():,} seen only once",
                  _pre("… " + " ".join(tokens[start:start + sample_words]) + " …"))
        fig, ax = figure(5.5, 3.6)
        viz.zipf(counts, label=name, ax=ax)
        panel.show(fig)

    picker.observe(panel.update(draw), names="value")
    again.on_click(panel.click(again, draw))
    panel.update(draw)()
    return panel.box


# -- chapter 01: static word vectors --------------------------------------------------------------
def check_word(vectors, word: str, model: str = "this model") -> str:
    """The word, cleaned; raises ValueError with close matches if it is empty or unknown."""
    import difflib

    word = word.strip().lower()
    if not word:
        raise ValueError("type a word first")
    if " " in word:
        raise ValueError(f"one word at a time, please (got {clip(word)!r})")
    if word not in vectors:
        close = difflib.get_close_matches(word, vectors.words[:50_000], n=5, cutoff=0.75) \
            if len(word) <= MAX_ECHO else []   # no word of the vocabulary is that long
        hint = f"; close matches: {', '.join(close)}" if close else ""
        raise ValueError(f"{clip(word)!r} is not in the vocabulary of {model}{hint}")
    return word


def neighbours_explorer(models: dict, word: str = "apple", topn: int = 10) -> w.VBox:
    """Type a word and pick a model → its nearest neighbours and a 2-D projection of them."""
    box = w.Text(value=word, description="word", continuous_update=False)
    picker = w.Dropdown(options=list(models), description="vectors")
    panel = Panel([w.HBox([box, picker])], text_height="70px")

    def draw():
        vectors = models[picker.value]
        query = check_word(vectors, box.value, picker.value)
        pairs = vectors.most_similar(query, topn=topn)
        panel.say(f"nearest to {query!r} in {picker.value}:",
                  _pre("  " + ", ".join(f"{n} ({s:.2f})" for n, s in pairs)))
        fig, ax = figure(5.5, 3.6)
        viz.projection(vectors, [query] + [n for n, _ in pairs], highlight=query, ax=ax)
        panel.show(fig)

    box.observe(panel.update(draw), names="value")
    picker.observe(panel.update(draw), names="value")
    panel.update(draw)()
    return panel.box


def analogy_explorer(models: dict, a: str = "man", b: str = "king", c: str = "woman", topn: int = 5) -> w.VBox:
    """a is to b as c is to ? — 3CosAdd (b − a + c) with the answers' cosines."""
    boxes = [w.Text(value=v, description=d, continuous_update=False, layout=w.Layout(width="180px"))
             for v, d in ((a, "a"), (b, "b"), (c, "c"))]
    picker = w.Dropdown(options=list(models), description="vectors")
    panel = Panel([w.HBox([*boxes, picker])], text_height="140px")

    def draw():
        vectors = models[picker.value]
        words = [check_word(vectors, box.value, picker.value) for box in boxes]
        if len(set(words)) < 3:
            raise ValueError("a, b and c must be three different words")
        a_, b_, c_ = (vectors.normed[vectors.index[x]] for x in words)
        answers = vectors.most_similar(b_ - a_ + c_, topn=topn, exclude=words)  # question words excluded
        panel.say(f"{words[0]} : {words[1]} :: {words[2]} : ?",
                  *(f"  {rank}. {word:15s} cos {cos:.3f}" for rank, (word, cos) in enumerate(answers, 1)))
        fig, ax = figure(5.5, 0.3 * len(answers) + 1.1)
        viz.bars([word for word, _ in answers], [cos for _, cos in answers], xlabel="cosine with b − a + c",
                 title=f"{words[0]} : {words[1]} :: {words[2]} : ?", ax=ax, fmt=".3f")
        ax.title.set_fontsize(9)
        panel.show(fig)

    for widget in (*boxes, picker):
        widget.observe(panel.update(draw), names="value")
    panel.update(draw)()
    return panel.box


# -- chapter 02: language models ------------------------------------------------------------------
def generation_explorer(models: dict, vocab, prompt: str = "the president said", n_words: int = 25) -> w.VBox:
    """Continue a prompt with a chosen LM; temperature, top-k and length sliders; 'sample again' draws a new seed.
    The plot: the next token's distribution after the prompt, as temperature and top-k reshape it.
    `vocab`: a word Vocab (the prompt is tokenized and lowercased) or any minilib tokenizer (BPE: as typed)."""
    import torch

    from minilib.data.tokenizer import Tokenizer, WordTokenizer
    from minilib.generate import generate, next_word_log_probs

    tok = vocab if isinstance(vocab, Tokenizer) else WordTokenizer(vocab)
    box = w.Text(value=prompt, description="prompt", continuous_update=False, layout=w.Layout(width="360px"))
    picker = w.Dropdown(options=list(models), description="model")
    temperature = w.FloatSlider(value=0.8, min=0.0, max=2.0, step=0.1, description="temperature",
                                continuous_update=False, style=WIDE)
    top_k = w.IntSlider(value=0, min=0, max=200, step=10, description="top-k (0: off)", continuous_update=False,
                        style=WIDE)
    length = w.IntSlider(value=n_words, min=5, max=max(200, n_words), step=5, description="length",
                         continuous_update=False, style=WIDE)
    again = w.Button(description="sample again", icon="refresh")
    panel = Panel([w.HBox([box, picker, again]), w.HBox([temperature, top_k, length])], text_height="90px")
    seed = [0]

    def next_word_probs(model, ids, t, k, shown=12):
        """The `shown` likeliest next tokens and their probabilities after sampling's reshaping."""
        log_probs = next_word_log_probs(model, ids)
        for banned in (tok.unk_id, tok.pad_id):
            if banned is not None:
                log_probs[banned] = float("-inf")  # generate never samples <unk> or padding
        scores = log_probs / max(t, 1e-6)  # t = 0 is greedy: all mass on the argmax
        if k and k < scores.numel():
            scores = scores.masked_fill(scores < torch.topk(scores, k).values[-1], float("-inf"))
        probs = torch.softmax(scores, -1)
        top = torch.topk(probs, min(shown, int((probs > 0).sum())))  # tokens top-k left a chance
        return [repr(tok.decode([i]))[1:-1] for i in top.indices.tolist()], top.values.tolist()

    def draw():
        if len(box.value) > 2000:
            raise ValueError("the prompt is very long: a few words are enough")
        ids = tok.encode(box.value)
        if not ids:
            raise ValueError(f"the prompt {clip(box.value)!r} has no words: type at least one")
        model = models[picker.value]
        text = generate(model, tok, box.value, n_words=length.value, temperature=temperature.value,
                        top_k=top_k.value or None, seed=seed[0])
        panel.say(_pre(text))
        words, probs = next_word_probs(model, ids, temperature.value, top_k.value)
        fig, ax = figure(6.5, 3.2)
        viz.bars(words, probs, xlabel="probability of the next token", ax=ax, fmt=".3f",
                 title=f"{picker.value} after “{tok.decode(ids[-8:]).strip()}”: "
                       f"T={temperature.value:.1f}, top-k={top_k.value or 'off'}")
        ax.title.set_fontsize(9)
        panel.show(fig)

    def resample():
        seed[0] += 1
        draw()

    for widget in (box, picker, temperature, top_k, length):
        widget.observe(panel.update(draw), names="value")
    again.on_click(panel.click(again, resample))
    panel.update(draw)()
    return panel.box


# -- live training: a progress bar and line inside the panel ---------------------------------------
def cloze_explorer(bert, bert_tok, gpt, gpt_tok, sentence: str = "the [MASK] said the budget would pass .",
                   k: int = 8) -> w.VBox:
    """Type a sentence with [MASK]s: BERT's top-k for each blank (it reads both sides) beside GPT's (the words
    before the blank only; it fills earlier blanks with its own first guess). The plot: one blank, both models."""
    from minilib.eval.cloze import MASK, bert_cloze, left_to_right_cloze

    box = w.Text(value=sentence, description="sentence", continuous_update=False, layout=w.Layout(width="480px"))
    blank = w.Dropdown(options=[1], description="blank", layout=w.Layout(width="140px"))
    top_k = w.IntSlider(value=k, min=3, max=15, description="top-k", continuous_update=False, style=WIDE)
    panel = Panel([w.HBox([box, blank]), top_k], text_height="110px")

    def draw():
        if len(box.value) > 1000:
            raise ValueError("the sentence is very long: one sentence with a blank or two is enough")
        both = {"BERT (both sides)": bert_cloze(bert, bert_tok, box.value, top_k.value),
                "GPT (left side only)": left_to_right_cloze(gpt, gpt_tok, box.value, top_k.value)}
        n = len(both["GPT (left side only)"])
        if list(blank.options) != list(range(1, n + 1)):
            with blank.hold_trait_notifications():
                blank.options, blank.value = list(range(1, n + 1)), min(blank.value or 1, n)
        panel.say(*(f"blank {i + 1}: " + " | ".join(f"{name.split()[0]}: " + ", ".join(g[i].tokens[:3])
                                                   for name, g in both.items()) for i in range(n)))
        fig, axes = figure(8, min(0.22 * top_k.value + 1.1, 3.6), ncols=2)
        marked = MASK.sub("___", box.value.strip())
        for ax, (name, guesses) in zip(axes, both.items()):
            g = guesses[blank.value - 1]
            viz.bars(g.tokens, g.probs, xlabel="probability", title=name, ax=ax, fmt=".2f")
            ax.title.set_fontsize(9)
        fig.suptitle(f"blank {blank.value} of “{marked[:70]}”", fontsize=9)
        panel.show(fig)

    for widget in (box, blank, top_k):
        widget.observe(panel.update(draw), names="value")
    panel.update(draw)()
    return panel.box


def _training_callback(panel: Panel, done: int, total: int, what: str, epochs: int):
    """A minilib.train callback moving the panel's bar through one of `total` jobs (`done` before it)
    as the Learner steps; `epochs` fit() calls of one epoch each make the job (fine_tune_classifier),
    or with epochs=1 one fit of the learner's own epochs (fine_tune_gpt)."""
    from minilib.train.callbacks import Callback

    class MoveBar(Callback):
        last = 0.0

        def after_step(self, learner):
            now = time.monotonic()
            steps = epochs * learner.total_steps  # total_steps: of this one-epoch fit
            if now - self.last > 0.2 or learner.step == steps:  # at most 5 updates a second
                self.last = now
                epoch = min(learner.step * epochs // max(steps, 1) + 1, epochs)
                if epochs == 1:  # one fit of several epochs
                    epoch, epochs_shown = learner.epoch + 1, learner.epochs
                else:
                    epochs_shown = epochs
                panel.progress(done + learner.step / max(steps, 1), total,
                               f"{what}: epoch {epoch}/{epochs_shown}, step {learner.step}/{steps}")
    return MoveBar()


# -- chapter 04: ULMFiT -----------------------------------------------------------------------------
def sample_efficiency_explorer(task: str, pretrained_path, config=None, results_dir=None,
                               grid_profile: str | None = None, more_methods: Sequence[str] = ()) -> w.VBox:
    """Chapter 04: error vs labels for each method. Cached grid points (of `grid_profile`, default
    the current profile) show at once; "train this point" trains the chosen label count / methods
    / seed live at the current profile's sizes, with a progress bar, and shows it apart from the
    grid: a ring on the plot and its own line, labelled with its profile, never in the grid's mean.
    A click while training is ignored, and a trained point is cached, so it never trains twice.
    `more_methods`: later chapters' methods of the grid runner (e.g. "gpt-scratch", "gpt"), with their
    own default checkpoints and settings, on the same chart."""
    import dataclasses

    from minilib import runtime
    from minilab.experiments import grid as grid_runner
    from minilab.experiments import sample_efficiency as se

    # -- data access: every call into the experiments is here
    live_profile = runtime.profile()
    grid_prof = grid_profile or live_profile
    config = dataclasses.replace(config or se.SIZES[live_profile], task=task)
    grid_config = config if grid_profile is None else dataclasses.replace(se.SIZES[grid_profile], task=task)
    methods, style, resolve = [*se.METHODS, *more_methods], se.METHOD_STYLE, functools.partial(se.resolve_labels, task)

    def tunes_the_lm(method):  # stage (b) first: slow the first time, cached after
        return method in se.RECIPES and se.RECIPES[method].lm_fine_tuning

    def waits_for_stage_b(method):  # in class a click never starts hours of LM fine-tuning
        lm_config = se.method_config(config, method)
        return tunes_the_lm(method) and not se.lm_cache_path(se.lm_texts(task, lm_config), pretrained_path,
                                                              lm_config).exists()

    def grid_summary():
        rows = se.cached_rows(task, pretrained_path, grid_config, results_dir=results_dir, profile=grid_profile)
        rows += grid_runner.cached_rows(task, list(more_methods), grid_config.label_counts, grid_config.seeds,
                                        grid_prof) if more_methods else []
        return se.summarize(rows)

    def train_live(method, n_labels, seed_, callback):
        if method not in se.RECIPES:
            return grid_runner.run_point(task, n_labels, method, seed_, progress=False, callbacks=[callback])
        return se.run_point(task, n_labels, method, seed_, pretrained_path, config, results_dir=results_dir,
                            progress=False, callbacks=[callback])

    def fits(method):  # fit() calls of one epoch each that make a point (the progress bar's unit)
        return config.clf_epochs if method in se.RECIPES else 1

    def plot_grid(summary, ax):
        se.plot_curves(summary, task, ax=ax)

    # -- the panel
    grid = grid_summary()  # the shipped grid does not change while the panel is open: read it once
    counts = list(dict.fromkeys([*grid_config.label_counts, *config.label_counts]))
    if runtime.classroom():  # only the counts the shipped grid answers at once
        cached = {r["n_labels"] for r in grid}
        counts = [n for n in grid_config.label_counts if resolve(n) in cached] or counts
    counts.sort(key=resolve)
    labels = w.SelectionSlider(options=[(str(n), n) for n in counts], value=100 if 100 in counts else counts[0],
                               description="labels")
    boxes = {m: w.Checkbox(value=True, description=style[m]["label"].split(" (")[0], indent=False,
                           layout=w.Layout(width="auto", margin="0 16px 0 0")) for m in methods}
    seed = w.IntText(value=max(config.seeds) + 1, description="seed", layout=w.Layout(width="160px"))
    live_training = LiveTraining()
    panel = Panel([w.HBox([labels, seed, *live_training.controls]), w.HBox(list(boxes.values()))], progress=True,
                  text_height="120px")
    panel.clamp(seed, *SEEDS)
    live: list[dict] = []  # points trained in this panel, at the live profile's sizes: never mixed into `grid`
    notes: list[str] = []  # what the last click could not train, and why
    panel.progress(0, 1, live_training.note(live_profile) if live_training.opt_in is not None else
                   f"'train this point' trains at {live_profile} sizes; it is shown apart from the {grid_prof} grid")

    def draw():
        chosen = [m for m, b in boxes.items() if b.value]
        n = resolve(labels.value)
        summary = [r for r in grid if r["method"] in chosen]
        points = [p for p in live if p["method"] in chosen]
        cached = [f"{r['method']:18s} at {n:>5,} labels: error {r['error']:.1%} ± {r['error_std']:.1%} "
                  f"({r['seeds']} seed{'s' * (r['seeds'] > 1)}, cached {grid_prof} grid)"
                  for r in summary if r["n_labels"] == n]
        if not chosen:
            cached = ["tick at least one method"]
        elif not cached and summary:   # the methods have cached points, at other label counts
            have = sorted({r["n_labels"] for r in summary})
            cached = [f"no cached {grid_prof} points at {labels.value} labels (cached: {', '.join(map(str, have))} "
                      f"labels); to see one here, {live_training.hint()}"]
        elif not cached:
            cached = [f"no cached {grid_prof} points for these methods: {live_training.hint()}"]
        # the newest first: a live point's line is never scrolled out of the text area by the cached ones
        trained = [f"{p['method']:18s} at {p['n_labels']:>5,} labels: error {p['error']:.1%} "
                   f"(seed {p['seed']}, trained here at {live_profile} sizes, not in the mean)" for p in points[::-1]]
        panel.say(*notes, *trained, *cached)
        fig, (ax, curves) = figure(10, 3.4, ncols=2)
        plot_grid(summary, ax)
        for p in points:
            ax.scatter([p["n_labels"]], [p["error"] * 100], s=90, facecolors="none", linewidths=2,
                       edgecolors=style[p["method"]]["color"], zorder=5,
                       label=f"{p['method']}, seed {p['seed']} (trained here, {live_profile})")
            curves.plot([c["epoch"] for c in p["curve"]], [c["train_loss"] for c in p["curve"]], marker="o",
                        color=style[p["method"]]["color"], label=f"{p['method']} n={p['n_labels']} s{p['seed']}")
        ax.axvline(n, color="k", lw=0.8, ls=":")
        ax.set_title(f"{task}: error vs labels (lines: {grid_prof} grid; rings: trained here)", fontsize=9)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        curves.set(xlabel="epoch", ylabel="training loss")
        curves.set_title(f"learning curves of the points trained here ({live_profile} sizes)", fontsize=9)
        if points:
            curves.legend(fontsize=7)
        else:
            curves.text(0.5, 0.5, live_training.hint(), ha="center", va="center", transform=curves.transAxes)
        panel.show(fig)

    def train_point():
        chosen = [m for m, b in boxes.items() if b.value]
        if not chosen:
            panel.say("tick at least one method")
            return
        n_labels, seed_ = labels.value, seed.value
        skipped = [m for m in chosen if runtime.classroom() and waits_for_stage_b(m)]
        chosen = [m for m in chosen if m not in skipped]
        notes[:] = [f"{', '.join(skipped)}: not trained in classroom mode: stage (b) has not fine-tuned the LM on "
                    f"{task}'s text yet ({se.method_config(config, skipped[0]).lm_epochs} epochs of it: at laptop, hours on a CPU). "
                    f"Before class, train what this click would (stage b first, cached after): python -m minilib "
                    f"experiment sample-efficiency --task {task} --methods {','.join(skipped)} --labels {n_labels} "
                    f"--seeds {seed_ + 1}"] if skipped else []
        if not chosen:
            draw()
            return
        for i, method in enumerate(chosen):
            what = f"{method} ({i + 1}/{len(chosen)}), {n_labels} labels, seed {seed_}"
            lm_stage = "fine-tuning the LM on the task's text first (stage b; cached after), then " \
                if tunes_the_lm(method) else ""
            panel.progress(i, len(chosen), f"{what}: {lm_stage}training …")
            row = train_live(method, n_labels, seed_, _training_callback(panel, i, len(chosen), what, fits(method)))
            live[:] = [p for p in live if (p["method"], p["n_labels"], p["seed"]) != (method, row["n_labels"], seed_)]
            live.append(row)
            panel.progress(i + 1, len(chosen), f"{what}: test error {row['error']:.1%} ({row['seconds']:.0f} s)")
            draw()
        panel.progress(1, 1, f"done: {len(chosen)} point{'s' * (len(chosen) > 1)} trained at {live_profile} sizes")

    labels.observe(panel.update(draw), names="value")
    for b in boxes.values():
        b.observe(panel.update(draw), names="value")
    live_training.on_click(panel, train_point, live_profile, redraw=draw)
    panel.update(draw)()
    return panel.box


# -- chapter 03: ELMo -----------------------------------------------------------------------------
def contextual_explorer(model, static=None, word: str = "bank", sentences: Sequence[str] | None = None) -> w.VBox:
    """Type sentences (one per line, optionally "sense | sentence") and a word → the cosine between the
    word's vectors in those sentences, per biLM layer and for static vectors, with sense-grouping scores."""
    from minilab.experiments import contextual

    # -- data access
    def similarity(text_value, word_value):
        query, toks, positions, labels = contextual.parse_sentences(text_value, word_value)
        vectors = contextual.word_vectors(model, toks, positions, static)
        return query, labels, {name: contextual.cosine_matrix(v) for name, v in vectors.items()}

    def grouping(matrix, labels):
        return contextual.sense_grouping(matrix, labels)

    def plot(matrices, labels, query, axes):
        contextual.plot_similarity(matrices, labels, word=query, axes=axes)

    if sentences is None:
        sentences = [f"{sense} | {s}" for sense, s in contextual.EXAMPLES.get(word, contextual.EXAMPLES["bank"])]
    box = w.Text(value=word, description="word", continuous_update=False, layout=w.Layout(width="220px"))
    text = w.Textarea(value="\n".join(sentences), description="sentences", continuous_update=False,
                      layout=w.Layout(width="720px", height="150px"))
    panel = Panel([box, text], text_height="60px")

    def draw():
        query, labels, matrices = similarity(text.value, box.value)
        lines = []
        if static is not None and "static" not in matrices:
            lines.append(f"(the static vectors do not know {query!r}: no static panel)")
        if all(labels) and len(set(labels)) > 1:
            lines.append("sense grouping (within − across): " + ", ".join(
                f"{name} {grouping(m, labels):+.3f}" for name, m in matrices.items()))
        panel.say(*(lines or [f"{query!r} in {len(labels)} sentences"]))
        fig, axes = figure(2.6 * len(matrices) + 1.0, 3.3, ncols=len(matrices))
        plot(matrices, labels, query, [axes] if len(matrices) == 1 else axes)
        panel.show(fig)

    box.observe(panel.update(draw), names="value")
    text.observe(panel.update(draw), names="value")
    panel.update(draw)()
    return panel.box


def downstream_explorer(elmo_path, config=None, results_dir=None, grid_profile: str | None = None) -> w.VBox:
    """Chapter 03: RT sentiment from static vectors vs ELMo features. A label-count slider shows the cached
    points (of `grid_profile`, default the current profile) at once: accuracy vs labels per arm, and the
    per-epoch curves at that count. "train this point" trains every arm at that count and the chosen seed,
    live at the current profile's sizes, with a progress bar; it is shown apart from the grid (rings and
    its own lines, labelled with its profile). Clicks while training are ignored."""
    import numpy as np

    from minilib import runtime
    from minilab.experiments import elmo_downstream as ed, grid as runner

    # -- data access: every call into the experiment is here (to re-point at the grid runner)
    live_profile = runtime.profile()
    grid_prof = grid_profile or live_profile
    config = config or ed.SIZES[live_profile]
    grid_config = ed.SIZES[grid_profile] if grid_profile else config
    arms, kinds, colors, linestyle = ed.ARMS, ed.KINDS, ed.ARM_COLORS, ed.arm_linestyle

    def grid_rows():  # by the count as asked ("all" included): rows store the resolved number
        return {n: [r for arm in arms for s in grid_config.seeds
                    if (r := ed.cached_point(arm, n, s, elmo_path, grid_config, results_dir, profile=grid_prof))]
                for n in grid_config.label_counts}

    def prepare_features(kind, split, log):
        ed.features(kind, elmo_path, "rt", split, log=log)

    def train_live(arm, n_labels, seed_):
        return ed.run_point(arm, n_labels, seed_, elmo_path, config, results_dir=results_dir, log=lambda *_: None)

    def summarize(rows):
        return ed.summarize(rows)

    def plot_epochs(rows, ax):
        ed.plot_curves(rows, ax=ax)

    # -- the panel
    grid = grid_rows()  # the shipped grid does not change while the panel is open: read it once
    counts = list(dict.fromkeys([*grid_config.label_counts, *config.label_counts]))
    if runtime.classroom():  # only the counts the shipped grid answers at once
        counts = [n for n in counts if grid.get(n)] or counts
    counts.sort(key=lambda n: float("inf") if n == runner.ALL else n)
    labels = w.SelectionSlider(options=[(str(n), n) for n in counts], value=100 if 100 in counts else counts[0],
                               description="labels")
    seed = w.IntText(value=0, description="seed", layout=w.Layout(width="160px"))
    live_training = LiveTraining()
    panel = Panel([w.HBox([labels, seed, *live_training.controls])], progress=True, text_height="130px")
    panel.clamp(seed, *SEEDS)
    live: list[dict] = []  # points trained in this panel (live profile's sizes): never mixed into `grid`
    panel.progress(0, 1, live_training.note(live_profile) if live_training.opt_in is not None else
                   f"'train this point' trains all {len(arms)} arms at {live_profile} sizes, "
                   f"shown apart from the {grid_prof} grid")

    def draw():
        at_n = grid.get(labels.value, [])
        n = at_n[0]["n_labels"] if at_n else None
        summary = summarize([r for rows in grid.values() for r in rows])
        cached = [f"{r['arm']:16s} at {r['n_labels']:>5,} labels: accuracy {r['accuracy']:.1%} ± "
                  f"{r['accuracy_std']:.1%} ({r['seeds']} seed{'s' * (r['seeds'] > 1)}, cached {grid_prof} grid)"
                  for r in summarize(at_n)]
        # the newest first (the last click's arms, in their order): never scrolled out of the text area
        clicks = list(dict.fromkeys((p["n_labels"], p["seed"]) for p in live))[::-1]
        trained = [f"{p['arm']:16s} at {p['n_labels']:>5,} labels: accuracy {p['accuracy']:.1%} "
                   f"(seed {p['seed']}, trained here at {live_profile} sizes, not in the mean)"
                   for click in clicks for p in live if (p["n_labels"], p["seed"]) == click]
        panel.say(*trained, *(cached or [f"no cached {grid_prof} points at {labels.value} labels: "
                                         f"{live_training.hint()}"]))
        fig, (ax, epochs) = figure(10, 3.4, ncols=2)
        for arm in arms:
            rows = sorted((r for r in summary if r["arm"] == arm), key=lambda r: r["n_labels"])
            if rows:
                x = np.array([r["n_labels"] for r in rows])
                acc, std = (np.array([r[k] for r in rows]) * 100 for k in ("accuracy", "accuracy_std"))
                ax.plot(x, acc, marker="o", ms=3, color=colors[arm], ls=linestyle(arm), label=arm)
                ax.fill_between(x, acc - std, acc + std, color=colors[arm], alpha=0.12)
        for p in live:
            ax.scatter([p["n_labels"]], [100 * p["accuracy"]], s=80, facecolors="none", linewidths=2,
                       edgecolors=colors[p["arm"]], zorder=5)
        if live:
            ax.scatter([], [], s=80, facecolors="none", edgecolors="k", label=f"trained here ({live_profile})")
        if n is not None and at_n:
            ax.axvline(n, color="k", lw=0.8, ls=":")
        ax.set(xscale="log", xlabel="labelled sentences (log scale)", ylabel="test accuracy (%)")
        ax.set_title(f"RT sentiment: {grid_prof} grid, mean ± std over seeds", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        if at_n:
            plot_epochs(at_n, epochs)
            epochs.set_title(f"{labels.value} labels: test accuracy per epoch ({grid_prof} grid)", fontsize=9)
            epochs.legend(fontsize=6, ncol=2)
        else:
            epochs.text(0.5, 0.5, f"no cached points at {labels.value} labels", ha="center", va="center",
                        transform=epochs.transAxes)
        panel.show(fig)

    def train_point():
        n_labels, seed_ = labels.value, seed.value
        needed = [(k, s) for k in kinds if any(k in arm.split("+") for arm in arms) for s in ("train", "test")]
        total = len(needed) + len(arms)
        for i, (kind, split) in enumerate(needed):
            panel.progress(i, total, f"features: {kind} vectors of RT {split} (computed once, then cached; "
                                     f"the first time takes a minute or more) …")
            prepare_features(kind, split, log=lambda *_: None)
        for j, arm in enumerate(arms):
            panel.progress(len(needed) + j, total, f"training {arm} ({j + 1}/{len(arms)}) on {n_labels} labels, "
                                                   f"seed {seed_}: choosing L2 by CV, then the head …")
            row = train_live(arm, n_labels, seed_)
            live[:] = [p for p in live if (p["arm"], p["n_labels"], p["seed"]) != (arm, row["n_labels"], seed_)]
            live.append(row)
        panel.progress(total, total, f"done: {len(arms)} arms at {n_labels} labels, seed {seed_}, "
                                     f"trained at {live_profile} sizes")
        draw()

    labels.observe(panel.update(draw), names="value")
    live_training.on_click(panel, train_point, live_profile, redraw=draw)
    panel.update(draw)()
    return panel.box


def scaling_explorer(summary: dict) -> w.VBox:
    """Chapter 08: pick a compute budget C = 6·N·D (log slider); the panel shows what each fitted law of the
    `scaling` experiment predicts there (the size sweep's: a model of N = C / 6D at its fixed D; the token
    sweep's: its fixed model trained on D = C / 6N) beside the measured run nearest in compute, and says
    when a prediction is an extrapolation. `summary`: `experiments.scaling.run()` or `.load()`."""
    import math

    from minilab.experiments import scaling

    flops = [r["flops"] for r in scaling.unique_runs(summary)] if summary.get("runs") else []
    # half a decade below the cheapest run to a decade past the dearest (beyond it the fits extrapolate)
    lo, hi = (math.log10(min(flops)) - 0.5, math.log10(max(flops)) + 1.0) if flops else (9.0, 15.0)
    middle = 10 ** ((lo + 0.5 + hi - 1.0) / 2)                  # the geometric middle of the measured runs
    budget = w.FloatLogSlider(value=middle, base=10, min=lo, max=hi, step=0.05,
                              description="compute budget C (FLOPs)", readout_format=".2e",
                              continuous_update=False, style=WIDE, layout=w.Layout(width="560px"))
    panel = Panel([budget], text_height="110px")

    def draw():
        here = scaling.at_compute(summary, budget.value)
        size, tokens, near = here["params"], here["tokens"], here["nearest"]

        def where(p):
            return "within the measured range" if p["inside"] else "extrapolated beyond the measured range"

        panel.say(f"C = 6·N·D = {budget.value:.2e} FLOPs",
                  f"size sweep fit:  N = {size['params']:,.0f} non-embedding parameters on {size['tokens']:,} "
                  f"tokens → predicted {size['loss']:.3f} nats/token ({where(size)})",
                  f"token sweep fit: {summary['fits']['tokens']['shape']} (N = {tokens['params']:,}) on "
                  f"{tokens['tokens']:,.0f} tokens → predicted {tokens['loss']:.3f} nats/token ({where(tokens)})",
                  f"measured, nearest in compute: {near['shape']} on {near['tokens']:,} tokens, C = "
                  f"{near['flops']:.2e}: {near['valid_nats_per_token']:.3f} nats/token")
        fig, ax = figure(7.5, 3.4)
        scaling.plot_compute(summary, ax=ax, flops=budget.value)
        ax.set_title(f"{summary['profile']} runs: ★ the fits' predictions at {budget.value:.2e} FLOPs", fontsize=9)
        panel.show(fig)

    budget.observe(panel.update(draw), names="value")
    panel.update(draw)()
    return panel.box


# -- chapter 08: the league -------------------------------------------------------------------------
def league_explorer(grid_profile: str = "laptop", results_dir=None) -> w.VBox:
    """Chapter 08: one column of the league at a time. Pick a task and a label count: every era's cached
    test error (mean ± std over its seeds, `grid_profile`'s grid) shows at once as a bar, the simple
    baselines hatched and the best of the column starred; an era that has not run says why. Pick an era (its
    bar is outlined in red and its line marked ▶) and a seed and "train this point" trains it live through the
    one grid runner at the current profile's sizes: a ring on that era's bar, its own line at the top of the
    text, never in the cached mean (a cached point answers at once)."""
    from minilib import tasks as task_registry
    from minilab.experiments import grid as grid_runner
    from minilab.experiments import league
    from minilab.experiments import sample_efficiency as se

    live_profile = runtime.profile()
    columns = league.table(grid_profile, results_dir=results_dir)   # the cached league, read once
    label_options = list(dict.fromkeys(c["labels"] for c in columns))
    task = w.Dropdown(options=list(league.TASKS), value=league.TASKS[0], description="task")
    labels = w.SelectionSlider(options=[(str(n), n) for n in label_options], value=label_options[0],
                               description="labels")
    era = w.Dropdown(description="era", style=WIDE)
    seed = w.IntText(value=len(league.SEEDS), description="seed", layout=w.Layout(width="160px"))
    live_training = LiveTraining()
    panel = Panel([w.HBox([task, labels]), w.HBox([era, seed, *live_training.controls])], progress=True,
                  text_height="155px")   # a column's 8 eras without scrolling (the panel then needs ~600 px)
    panel.clamp(seed, *SEEDS)
    syncing = [False]           # the era picker's options are being set for a new column: no redraw of its own
    live: list[dict] = []       # points trained in this panel, at the live profile: never in the cached means
    panel.progress(0, 1, live_training.note(live_profile) if live_training.opt_in is not None else
                   f"'train this point' trains at {live_profile} sizes, shown apart from the {grid_profile} league")

    def column():
        return [c for c in columns if c["task"] == task.value and c["labels"] == labels.value]

    def runnable_eras():
        keep = era.value
        syncing[0] = True
        try:
            era.options = [(c["era"], c["method"]) for c in column()
                           if c["reason"] in (None, "not run")] or [("—", None)]
            methods = [m for _, m in era.options]
            era.value = keep if keep in methods else methods[0]
        finally:
            syncing[0] = False

    def draw():
        cells = column()
        # the newest first: a point trained here is never scrolled out of the text area by the column
        lines = [f"  {'':13s} {p['method']:12s} error {p['error']:.1%} (seed {p['seed']}, trained here "
                 f"at {live_profile} sizes, not in the mean)"
                 for p in live[::-1] if p["task"] == task.value and p["labels"] == labels.value]
        for c in cells:
            mark = "▶ " if c["method"] is not None and c["method"] == era.value else "  "   # the era picked
            if c["error"] is not None:
                lines.append(f"{mark}{c['era']:13s} {c['method']:12s} error {c['error']:.1%} ± {c['error_std']:.1%} "
                             f"({c['seeds']} seed{'s' * (c['seeds'] > 1)}){'  ★ best' if c['best'] else ''}")
            else:
                lines.append(f"{mark}{c['era']:13s} {c['method'] or '':12s} {'— ' + c['reason']}")
        panel.say(*lines)
        fig, ax = figure(7.5, 3.4)
        # every era of the column is a row: a bar where it has cached points, else why not (so a pick of an
        # era that has not run is seen in the plot too: its row's label turns red)
        ys = range(len(cells))
        for y, c in zip(ys, cells):
            baseline, picked = c["method"] in league.BASELINES, c["method"] is not None and c["method"] == era.value
            if c["error"] is None:
                ax.text(0.3, y, f"— {c['reason']}", va="center", fontsize=8, color="tab:red" if picked else "0.35")
                continue
            ax.barh(y, c["error"] * 100, xerr=c["error_std"] * 100, color="0.8" if baseline else "tab:blue",
                    hatch="//" if baseline else None, edgecolor="tab:red" if picked else "0.4",
                    linewidth=2.5 if picked else 1.0, capsize=3)
            ax.text(c["error"] * 100 + c["error_std"] * 100 + 0.5, y, f"{c['error']:.1%}" + (" ★" if c["best"] else ""),
                    va="center", fontsize=8)
        rows = {c["method"]: y for y, c in zip(ys, cells) if c["error"] is not None}
        for p in live:
            if p["task"] == task.value and p["labels"] == labels.value and p["method"] in rows:
                ax.scatter([p["error"] * 100], [rows[p["method"]]], s=90, facecolors="none", edgecolors="tab:red",
                           linewidths=2, zorder=5)
        ax.set_yticks(list(ys), [c["era"] for c in cells])
        for tick, c in zip(ax.get_yticklabels(), cells):
            if c["method"] is not None and c["method"] == era.value:
                tick.set(color="tab:red", fontweight="bold")
        ax.set_xlim(left=0)
        ax.invert_yaxis()
        ax.set_xlabel("test error (%)")
        ax.set_title(f"{task.value}, {labels.value} labels: cached {grid_profile} league (hatched: baselines; "
                     f"red: the era picked; rings: trained here)", fontsize=9)
        shown = [c for c in cells if c["error"] is not None]
        if not shown:
            ax.text(0.5, 0.5, "nothing cached for this column yet", ha="center", va="center", transform=ax.transAxes)
        panel.show(fig)

    def train_point():
        method = era.value
        if method is None:
            panel.say("no era of this column can run here")
            return
        what = f"{method}, {task.value}, {labels.value} labels, seed {seed.value}"
        fits = se.method_config(se.SIZES[live_profile], method).clf_epochs if method in se.RECIPES else 1
        panel.progress(0, 1, f"{what}: training …")
        row = grid_runner.run_point(task_registry.get(task.value), labels.value, method, seed.value,
                                    callbacks=[_training_callback(panel, 0, 1, what, fits)], results_dir=results_dir)
        live[:] = [p for p in live if (p["task"], p["labels"], p["method"], p["seed"]) !=
                   (task.value, labels.value, method, seed.value)]
        live.append({**row, "labels": labels.value})
        panel.progress(1, 1, f"{what}: test error {row['error']:.1%} ({row['seconds']:.0f} s)")
        draw()

    def on_column():
        runnable_eras()
        draw()

    redraw = panel.update(draw)

    def on_era(change):   # a pick redraws; options set for a new column do not (on_column draws after them)
        if not syncing[0]:
            redraw(change)

    task.observe(panel.update(on_column), names="value")
    labels.observe(panel.update(on_column), names="value")
    era.observe(on_era, names="value")
    live_training.on_click(panel, train_point, live_profile, redraw=draw)
    panel.update(on_column)()
    return panel.box
