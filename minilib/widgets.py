"""ipywidgets panels for the lessons.

A widget in front of a class must answer at once and never show a
traceback: every handler here catches errors and prints a one-line message
instead, and slow work is cached after its first run.
"""
from __future__ import annotations

import functools
import random
import textwrap
from typing import Callable, Sequence

import ipywidgets as w
import matplotlib.pyplot as plt

from minilib import viz


def _safe(output: w.Output, fn: Callable[[], None]) -> None:
    """Run a widget handler; show a short message instead of a traceback if it fails."""
    with output:
        output.clear_output(wait=True)
        try:
            fn()
        except Exception as exc:  # a widget must never crash in front of a room
            print(f"⚠ {type(exc).__name__}: {exc}")


def _one_at_a_time(button: w.Button, fn: Callable[[], None]) -> Callable:
    """A click handler running `fn` with `button` disabled; clicks while it runs are ignored."""
    busy = [False]

    def on_click(_):
        if busy[0]:
            return  # the first click is still running
        busy[0], button.disabled = True, True
        try:
            fn()
        finally:
            busy[0], button.disabled = False, False
    return on_click


def corpus_explorer(load_tokens: Callable[[str], list[str]], names: Sequence[str],
                    sample_words: int = 60, seed: int = 0) -> w.VBox:
    """Pick a corpus → its size, its Zipf plot and a random passage.

    `load_tokens(name)` returns the corpus as one token list; results are cached,
    so a second visit to a corpus is instant.
    """
    load = functools.lru_cache(maxsize=None)(load_tokens)
    picker = w.Dropdown(options=list(names), description="corpus")
    again = w.Button(description="another passage", icon="refresh")
    out = w.Output()
    rng = random.Random(seed)

    def show(*_):
        def draw():
            tokens = load(picker.value)
            counts = viz.rank_frequency(tokens)
            print(f"{picker.value}: {len(tokens):,} tokens, {len(counts):,} distinct words, "
                  f"{(counts == 1).sum():,} seen only once")
            start = rng.randrange(max(1, len(tokens) - sample_words))
            print(textwrap.fill("… " + " ".join(tokens[start:start + sample_words]) + " …", 100))
            fig, ax = plt.subplots(figsize=(5.5, 3.6))
            viz.zipf(counts, label=picker.value, ax=ax)
            plt.show()
        _safe(out, draw)

    picker.observe(show, names="value")
    again.on_click(show)
    show()
    return w.VBox([w.HBox([picker, again]), out])


# -- chapter 01: static word vectors --------------------------------------------------------------
def check_word(vectors, word: str, model: str = "this model") -> str:
    """The word, cleaned; raises ValueError with close matches if it is empty or unknown."""
    import difflib

    word = word.strip().lower()
    if not word:
        raise ValueError("type a word first")
    if " " in word:
        raise ValueError(f"one word at a time, please (got {word!r})")
    if word not in vectors:
        close = difflib.get_close_matches(word, vectors.words[:50_000], n=5, cutoff=0.75)
        hint = f"; close matches: {', '.join(close)}" if close else ""
        raise ValueError(f"{word!r} is not in the vocabulary of {model}{hint}")
    return word


def neighbours_explorer(models: dict, word: str = "apple", topn: int = 10) -> w.VBox:
    """Type a word and pick a model → its nearest neighbours and a 2-D projection of them."""
    box = w.Text(value=word, description="word", continuous_update=False)
    picker = w.Dropdown(options=list(models), description="vectors")
    out = w.Output()

    def show(*_):
        def draw():
            vectors = models[picker.value]
            query = check_word(vectors, box.value, picker.value)
            pairs = vectors.most_similar(query, topn=topn)
            print(f"nearest to {query!r} in {picker.value}:")
            print("  " + ", ".join(f"{n} ({s:.2f})" for n, s in pairs))
            fig, ax = plt.subplots(figsize=(5.5, 4))
            viz.projection(vectors, [query] + [n for n, _ in pairs], highlight=query, ax=ax)
            plt.show()
        _safe(out, draw)

    box.observe(show, names="value")
    picker.observe(show, names="value")
    show()
    return w.VBox([w.HBox([box, picker]), out])


def analogy_explorer(models: dict, a: str = "man", b: str = "king", c: str = "woman", topn: int = 5) -> w.VBox:
    """a is to b as c is to ? — 3CosAdd (b − a + c) with the answers' cosines."""
    boxes = [w.Text(value=v, description=d, continuous_update=False, layout=w.Layout(width="180px"))
             for v, d in ((a, "a"), (b, "b"), (c, "c"))]
    picker = w.Dropdown(options=list(models), description="vectors")
    out = w.Output()

    def show(*_):
        def answer():
            vectors = models[picker.value]
            words = [check_word(vectors, box.value, picker.value) for box in boxes]
            if len(set(words)) < 3:
                raise ValueError("a, b and c must be three different words")
            a_, b_, c_ = (vectors.normed[vectors.index[x]] for x in words)
            answers = vectors.most_similar(b_ - a_ + c_, topn=topn, exclude=words)  # question words excluded
            print(f"{words[0]} : {words[1]} :: {words[2]} : ?")
            for rank, (answer_word, cos) in enumerate(answers, 1):
                print(f"  {rank}. {answer_word:15s} cos {cos:.3f}")
        _safe(out, answer)

    for widget in (*boxes, picker):
        widget.observe(show, names="value")
    show()
    return w.VBox([w.HBox([*boxes, picker]), out])


# -- chapter 02: language models ------------------------------------------------------------------
def generation_explorer(models: dict, vocab, prompt: str = "the president said", n_words: int = 25) -> w.VBox:
    """Continue a prompt with a chosen LM; temperature and top-k sliders; 'sample again' draws a new seed."""
    from minilib.generate import generate

    box = w.Text(value=prompt, description="prompt", continuous_update=False, layout=w.Layout(width="360px"))
    picker = w.Dropdown(options=list(models), description="model")
    temperature = w.FloatSlider(value=0.8, min=0.0, max=2.0, step=0.1, description="temperature",
                                continuous_update=False)
    top_k = w.IntSlider(value=0, min=0, max=200, step=10, description="top-k (0: off)", continuous_update=False)
    again = w.Button(description="sample again", icon="refresh")
    out = w.Output()
    seed = [0]

    def show(*_):
        def sample():
            if len(box.value) > 2000:
                raise ValueError("the prompt is very long: a few words are enough")
            text = generate(models[picker.value], vocab, box.value, n_words=n_words, temperature=temperature.value,
                            top_k=top_k.value or None, seed=seed[0])
            print(textwrap.fill(text, 100))
        _safe(out, sample)

    def resample(_):
        seed[0] += 1
        show()

    for widget in (box, picker, temperature, top_k):
        widget.observe(show, names="value")
    again.on_click(resample)
    show()
    return w.VBox([w.HBox([box, picker]), w.HBox([temperature, top_k, again]), out])


def sample_efficiency_explorer(task: str, pretrained_path, config=None, results_dir=None,
                               grid_profile: str | None = None) -> w.VBox:
    """Chapter 04: error vs labels for each method. Cached grid points (of `grid_profile`, default
    the current profile) show at once; "train this point" trains the chosen label count / methods
    / seed live at the current profile's sizes (progress bar, learning curve) and adds it to the
    plot as a ring. A click while training is ignored, and a trained point is cached, so clicking
    twice never trains twice."""
    import dataclasses

    from minilib import runtime
    from minilib.experiments import sample_efficiency as se

    config = dataclasses.replace(config or se.SIZES[runtime.profile()], task=task)
    grid_config = config if grid_profile is None else dataclasses.replace(se.SIZES[grid_profile], task=task)
    counts = list(dict.fromkeys([*grid_config.label_counts, *config.label_counts]))
    counts.sort(key=lambda n: se.resolve_labels(task, n))
    labels = w.SelectionSlider(options=[(str(n), n) for n in counts], value=100 if 100 in counts else counts[0],
                               description="labels")
    boxes = {m: w.Checkbox(value=True, description=se.METHOD_STYLE[m]["label"].split(" (")[0], indent=False)
             for m in se.METHODS}
    seed = w.BoundedIntText(value=max(config.seeds) + 1, min=0, max=99, description="seed", layout=w.Layout(width="160px"))
    train = w.Button(description="train this point", icon="play", button_style="primary")
    plot_out, live_out = w.Output(), w.Output()
    live: list[dict] = []  # points trained in this session

    def draw(*_):
        def show():
            rows = {(r["method"], r["n_labels"], r["seed"]): r
                    for r in se.cached_rows(task, pretrained_path, grid_config, results_dir=results_dir,
                                            profile=grid_profile) + live}
            chosen = [m for m, b in boxes.items() if b.value]
            summary = [r for r in se.summarize(list(rows.values())) if r["method"] in chosen]
            if not summary:
                print("no cached points for these methods yet: press 'train this point'")
                return
            n = se.resolve_labels(task, labels.value)
            for r in summary:
                if r["n_labels"] == n:
                    print(f"{r['method']:18s} at {n:>5,} labels: error {r['error']:.1%} ± {r['error_std']:.1%} "
                          f"({r['seeds']} seed{'s' * (r['seeds'] > 1)})")
            ax = se.plot_curves(summary, task, points=[p for p in live if p["method"] in chosen])
            ax.axvline(n, color="k", lw=0.8, ls=":")
            plt.show()
        _safe(plot_out, show)

    def train_point():
        def run():
            chosen = [m for m, b in boxes.items() if b.value]
            if not chosen:
                print("tick at least one method")
                return
            fig, ax = plt.subplots(figsize=(5, 3))
            for method in chosen:
                print(f"training {method} on {labels.value} labels, seed {seed.value} …")
                row = se.run_point(task, labels.value, method, seed.value, pretrained_path, config,
                                   results_dir=results_dir, progress=True)
                live.append(row)
                epochs = [c["epoch"] for c in row["curve"]]
                ax.plot(epochs, [c["train_loss"] for c in row["curve"]], marker="o",
                        color=se.METHOD_STYLE[method]["color"], label=method)
                print(f"{method}: test error {row['error']:.1%} ({row['seconds']:.0f} s)")
            ax.set(xlabel="epoch", ylabel="training loss", title="learning curves of this point")
            ax.legend(fontsize=8)
            plt.show()
        _safe(live_out, run)
        draw()

    labels.observe(draw, names="value")
    for b in boxes.values():
        b.observe(draw, names="value")
    train.on_click(_one_at_a_time(train, train_point))
    draw()
    return w.VBox([w.HBox([labels, seed, train]), w.HBox(list(boxes.values())), plot_out, live_out])


# -- chapter 03: ELMo -----------------------------------------------------------------------------
def contextual_explorer(model, static=None, word: str = "bank", sentences: Sequence[str] | None = None) -> w.VBox:
    """Type sentences (one per line, optionally "sense | sentence") and a word → the cosine between the
    word's vectors in those sentences, per biLM layer and for static vectors, with sense-grouping scores."""
    from minilib.experiments import contextual

    if sentences is None:
        sentences = [f"{sense} | {s}" for sense, s in contextual.EXAMPLES.get(word, contextual.EXAMPLES["bank"])]
    box = w.Text(value=word, description="word", continuous_update=False, layout=w.Layout(width="220px"))
    text = w.Textarea(value="\n".join(sentences), description="sentences", continuous_update=False,
                      layout=w.Layout(width="720px", height="170px"))
    out = w.Output()

    def show(*_):
        def draw():
            query, toks, positions, labels = contextual.parse_sentences(text.value, box.value)
            vectors = contextual.word_vectors(model, toks, positions, static)
            matrices = {name: contextual.cosine_matrix(v) for name, v in vectors.items()}
            if static is not None and "static" not in matrices:
                print(f"(the static vectors do not know {query!r}: no static panel)")
            if all(labels) and len(set(labels)) > 1:
                print("sense grouping (within − across): " + ", ".join(
                    f"{name} {contextual.sense_grouping(m, labels):+.3f}" for name, m in matrices.items()))
            contextual.plot_similarity(matrices, labels, word=query)
            plt.show()
        _safe(out, draw)

    box.observe(show, names="value")
    text.observe(show, names="value")
    show()
    return w.VBox([box, text, out])


def downstream_explorer(elmo_path, config=None, results_dir=None, grid_profile: str | None = None) -> w.VBox:
    """Chapter 03: RT sentiment from static vectors vs ELMo features. A label-count slider shows the cached
    points' learning curves (of `grid_profile`, default the current profile) at once; "train this point"
    trains both arms at that count and the chosen seed, live. Clicks while training are ignored."""
    from minilib import runtime
    from minilib.experiments import elmo_downstream as ed

    prof = runtime.profile()
    config = config or ed.SIZES[prof]
    grid_config = ed.SIZES[grid_profile] if grid_profile else config
    results_dir = results_dir or ed.RESULTS_DIR
    counts = list(dict.fromkeys([*grid_config.label_counts, *config.label_counts]))
    labels = w.SelectionSlider(options=[(str(n), n) for n in counts], value=100 if 100 in counts else counts[0],
                               description="labels")
    seed = w.BoundedIntText(value=0, min=0, max=99, description="seed", layout=w.Layout(width="160px"))
    train = w.Button(description="train this point", icon="play", button_style="primary")
    plot_out, live_out = w.Output(), w.Output()

    def draw(*_):
        def show():
            rows = [r for arm in ed.ARMS for s in grid_config.seeds
                    if (r := ed.cached_point(arm, labels.value, s, elmo_path, grid_config, results_dir,
                                             profile=grid_profile or prof))]
            if not rows:
                print(f"no cached points at {labels.value} labels yet: press 'train this point'")
                return
            for r in ed.summarize(rows):
                print(f"{r['arm']:16s} at {r['n_labels']:>5,} labels: accuracy {r['accuracy']:.1%} "
                      f"± {r['accuracy_std']:.1%} ({r['seeds']} seed{'s' * (r['seeds'] > 1)})")
            ax = ed.plot_curves(rows)
            ax.set_title(f"RT sentiment, {labels.value} labels: test accuracy per epoch", fontsize=9)
            plt.show()
        _safe(plot_out, show)

    def train_point():
        def run():
            rows = []
            for arm in ed.ARMS:
                print(f"training {arm} on {labels.value} labels, seed {seed.value} …")
                rows.append(ed.run_point(arm, labels.value, seed.value, elmo_path, config,
                                         results_dir=results_dir))
                print(f"{arm}: test accuracy {rows[-1]['accuracy']:.1%} ({rows[-1]['seconds']:.1f} s)")
            ed.plot_curves(rows).set_title("this point: test accuracy per epoch", fontsize=9)
            plt.show()
        _safe(live_out, run)
        draw()

    labels.observe(draw, names="value")
    train.on_click(_one_at_a_time(train, train_point))
    draw()
    return w.VBox([w.HBox([labels, seed, train]), plot_out, live_out])
