"""Plots and widgets: the shared lesson panels must draw, fit Zipf's law and never raise.

Every panel draws a plot one way: a PNG set on an ipywidgets.Image. These tests
decode that PNG after each interaction and fail if it is blank; the browser
tests (tests/browser/) do the same in JupyterLab.
"""
import io
import time

import matplotlib

matplotlib.use("Agg")

import ipywidgets as w
import numpy as np
import pytest
import torch
from PIL import Image

from minilib import viz
from minilab import story, widgets
from minilab.experiments import grid
from panels import assert_fits, part, parts, plot_pixels, text


# -- viz --------------------------------------------------------------------------------------------
def test_timeline_draws_every_milestone():
    ax = story.timeline()
    labels = [t.get_text() for t in ax.texts]
    assert len(labels) == len(story.MILESTONES)
    assert any(label.startswith("BERT") for label in labels)


def test_zipf_slope_recovers_the_exponent():
    ranks = np.arange(1, 20_001)
    counts = np.floor(1e6 / ranks ** 1.0) + 1
    assert viz.zipf_slope(counts) == pytest.approx(-1.0, abs=0.02)
    steeper = np.floor(1e8 / ranks ** 1.5) + 1
    assert viz.zipf_slope(steeper) == pytest.approx(-1.5, abs=0.05)


def test_zipf_slope_needs_enough_words():
    with pytest.raises(ValueError, match="distinct words"):
        viz.zipf_slope(np.array([5.0, 3.0]))


def test_rank_frequency_sorts_counts():
    assert list(viz.rank_frequency("a b a c a b".split())) == [3, 2, 1]


def test_bars_format_their_values():
    _, ax = widgets.figure(4, 2)
    viz.bars(["a", "b"], [0.5, 0.25], ax=ax, fmt=".2f")
    assert [t.get_text() for t in ax.texts] == [" 0.50", " 0.25"]


# -- the one way to draw and the guard ------------------------------------------------------------
def test_png_of_a_figure_is_a_valid_picture_and_leaves_pyplot_alone():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig, ax = widgets.figure(3, 2)
    ax.plot([0, 1], [0, 1])
    data = widgets.png(fig)
    assert data[:4] == b"\x89PNG" and Image.open(io.BytesIO(data)).size == (300, 200)
    assert plt.get_fignums() == before  # nothing left for the inline backend to flush


def test_click_guard_drops_a_double_click_and_a_click_while_running(monkeypatch):
    button = w.Button()
    panel = widgets.Panel([button], plot=False)
    calls = []

    def fn():
        calls.append(button.disabled)
        button.click()  # a click while running (e.g. re-entered): dropped

    button.on_click(panel.click(button, fn))
    button.click()
    button.click()  # the second click of a double-click, handled right after the first
    assert calls == [True] and not button.disabled
    monkeypatch.setattr(widgets, "DOUBLE_CLICK_S", 0.0)
    button.click()  # a later, deliberate click runs
    assert calls == [True, True]


def test_update_asked_while_running_runs_once_afterwards():
    slider = w.IntSlider()
    panel = widgets.Panel([slider], plot=False)
    seen = []

    def fn():
        seen.append(slider.value)
        if slider.value == 1:
            slider.value = 2  # observed while this update runs: queued,
            slider.value = 3  # and only the latest request is run, after this one

    slider.observe(panel.update(fn), names="value")
    slider.value = 1
    assert seen == [1, 3]


def test_an_error_is_one_line_in_the_panel():
    button = w.Button()
    panel = widgets.Panel([button], plot=False)

    def boom():
        raise FileNotFoundError("cache is empty")

    button.on_click(panel.click(button, boom))
    button.click()
    assert text(panel.box).strip() == "⚠ FileNotFoundError: cache is empty"
    assert not button.disabled


# -- chapter 00 ----------------------------------------------------------------------------------
def test_corpus_explorer_redraws_a_real_plot_and_shows_errors_as_a_line():
    zipfian = [f"w{r}" for r in range(1, 300) for _ in range(3000 // r)]
    loads = []

    def load(name):
        loads.append(name)
        if name == "broken":
            raise FileNotFoundError("cache is empty")
        return zipfian

    panel = widgets.corpus_explorer(load, ["ok", "broken", "again"])
    assert_fits(panel)
    plot_pixels(panel)
    picker = part(panel, w.Dropdown)
    picker.value = "broken"  # must not raise
    assert "FileNotFoundError: cache is empty" in text(panel)
    for name in ["again", "ok"] * 5:
        picker.value = name
        assert "distinct words" in text(panel) and "⚠" not in text(panel)
        plot_pixels(panel)
    assert loads.count("ok") == 1  # cached: a second visit does not reload


# -- chapter 01 ----------------------------------------------------------------------------------
def _toy_vectors():
    from minilib.data.vectors import WordVectors

    # king - man + woman = queen, exactly, in a 3-D space; "kings" is a close spelling of "king"
    words = ["man", "woman", "king", "queen", "apple", "kings"]
    vecs = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1], [1, 1, 1], [0, 0, -1], [1, 0.1, 1]], dtype=np.float32)
    return WordVectors(words, vecs)


def test_check_word_messages():
    vectors = _toy_vectors()
    assert widgets.check_word(vectors, "  King ") == "king"
    with pytest.raises(ValueError, match="type a word"):
        widgets.check_word(vectors, "   ")
    with pytest.raises(ValueError, match="one word at a time"):
        widgets.check_word(vectors, "the king")
    with pytest.raises(ValueError, match="close matches: king"):
        widgets.check_word(vectors, "kingg", "toy")


def test_analogy_explorer_answers_plots_and_refuses_repeats():
    panel = widgets.analogy_explorer({"toy": _toy_vectors()}, "man", "king", "woman", topn=2)
    assert "1. queen" in text(panel)
    plot_pixels(panel)
    a_box = parts(panel, w.Text)[0]
    a_box.value = "king"  # a == b: a clear line, no traceback
    assert "three different words" in text(panel)
    a_box.value = "pear"
    assert "not in the vocabulary" in text(panel)
    a_box.value = "man"
    assert "1. queen" in text(panel)
    plot_pixels(panel)


def test_neighbours_explorer_handles_unknown_and_empty():
    panel = widgets.neighbours_explorer({"toy": _toy_vectors(), "toy2": _toy_vectors()}, word="king", topn=3)
    assert "nearest to 'king'" in text(panel)
    first = plot_pixels(panel)
    box = part(panel, w.Text)
    box.value = ""
    assert "type a word" in text(panel)
    box.value = "zebra"
    assert "not in the vocabulary" in text(panel)
    box.value = "apple"
    assert "nearest to 'apple'" in text(panel)
    assert plot_pixels(panel).shape == first.shape and not np.array_equal(plot_pixels(panel), first)


# -- chapter 02 ----------------------------------------------------------------------------------
def test_generation_explorer_samples_plots_and_explains_an_empty_prompt():
    from minilib.data import Vocab
    from minilib.models.bigram import BigramLM

    torch.manual_seed(0)
    vocab = Vocab.build([["the", "cat", "sat", "on", "the", "mat"]])
    panel = widgets.generation_explorer({"bigram": BigramLM(len(vocab), 8)}, vocab, prompt="the cat", n_words=5)
    first = text(panel).strip()
    assert first.startswith("the cat") and len(first.split()) == 7
    plot_pixels(panel)
    for slider in parts(panel, w.FloatSlider) + parts(panel, w.IntSlider):
        assert slider.style.description_width == "initial"  # "temperature", not "temperat…"
    box = parts(panel, w.Text)[0]
    box.value = "   "
    assert "has no words" in text(panel)
    box.value = "the"
    widgets_again = part(panel, w.Button)
    widgets_again.click()  # sample again: a new seed, still no traceback
    assert "⚠" not in text(panel)
    part(panel, w.FloatSlider).value = 0.0  # greedy: the plot has one bar of probability 1
    plot_pixels(panel)
    (length,) = [s for s in parts(panel, w.IntSlider) if s.description == "length"]
    length.value = 10
    assert len(text(panel).strip().split()) == 1 + 10 and length.value == 10   # "the" and ten more


def test_generation_explorer_keeps_a_subword_prompt_as_typed():
    from minilib.data.tokenizer import train_bpe
    from minilib.models.gpt import GPT, gpt_config

    tok = train_bpe(["The Cat sat on the mat.", "A dog barked at the Cat."] * 10, 300)
    torch.manual_seed(0)
    gpt = GPT(gpt_config(tok.vocab_size, "smoke", block_size=32))
    panel = widgets.generation_explorer({"gpt": gpt}, tok, prompt="The Cat", n_words=5)
    assert text(panel).startswith("The Cat") and "⚠" not in text(panel)     # case kept: no word tokenizer
    plot_pixels(panel)


# -- chapter 03 ----------------------------------------------------------------------------------
def test_contextual_explorer_redraws_heat_maps_after_edits(monkeypatch):
    from minilab.experiments import contextual

    def fake_vectors(model, sentences, positions, static=None):
        g = torch.Generator().manual_seed(len(sentences))
        return {f"layer {k}": torch.randn(len(sentences), 8, generator=g) for k in range(3)}

    monkeypatch.setattr(contextual, "word_vectors", fake_vectors)
    sentences = ["a | the bank of the river", "a | a muddy bank", "b | the bank lent money", "b | a bank loan"]
    panel = widgets.contextual_explorer(model=None, word="bank", sentences=sentences)
    assert_fits(panel)
    assert "sense grouping" in text(panel)
    plot_pixels(panel)
    area = part(panel, w.Textarea)
    area.value += "\nc | one more bank"
    plot_pixels(panel)
    area.value = "no such word here\nnor here"
    assert "does not contain 'bank'" in text(panel)


def _fake_learner(steps):
    class L:
        step, total_steps = 0, steps
    return L()


def test_sample_efficiency_explorer_keeps_a_live_point_apart_from_the_grid(monkeypatch):
    from minilab.experiments import sample_efficiency as se

    grid = [{"task": "rt", "method": m, "n_labels": n, "seed": s, "error": 0.3 + 0.01 * s}
            for m in se.METHODS for n in (20, 40, 100) for s in (0, 1, 2)]
    trained, bar_values = [], []

    def fake_run_point(task, n_labels, method, seed, pretrained_path, config, *, callbacks=(), **_):
        trained.append((method, n_labels, seed))
        learner = _fake_learner(steps=4)
        for _ in range(config.clf_epochs * 4):
            learner.step += 1
            time.sleep(0.001)
            for cb in callbacks:
                cb.last = 0.0  # no throttling in the test
                cb.after_step(learner)
            bar_values.append(bar.value)
        return {"task": task, "method": method, "n_labels": int(n_labels), "seed": seed, "error": 0.9,
                "seconds": 1.0, "curve": [{"epoch": 1, "train_loss": 0.7}, {"epoch": 2, "train_loss": 0.5}]}

    monkeypatch.setattr(se, "cached_rows", lambda *a, **k: grid)
    monkeypatch.setattr(se, "run_point", fake_run_point)
    monkeypatch.setattr(se, "resolve_labels", lambda task, n: 8000 if n == se.ALL else int(n))
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    panel = widgets.sample_efficiency_explorer("rt", "unused.pt", grid_profile="laptop")
    assert_fits(panel)
    bar = part(panel, w.IntProgress)
    plot_pixels(panel)
    assert "error 31.0% ± 0.8% (3 seeds, cached laptop grid)" in text(panel)
    part(panel, w.IntText, "seed").value = 1  # the seed the old widget silently swapped into the laptop mean
    train = part(panel, w.Button, "train this point")
    train.click()
    train.click()  # a double-click: the second click is dropped, nothing trains twice
    assert trained == [(m, 100, 1) for m in se.METHODS]
    shown = text(panel)
    assert "error 31.0% ± 0.8% (3 seeds, cached laptop grid)" in shown  # the grid's mean is untouched
    assert "error 90.0% (seed 1, trained here at smoke sizes, not in the mean)" in shown
    assert bar_values == sorted(bar_values) and len(set(bar_values)) > 10  # the bar moved, forwards
    assert bar.value == bar.max
    plot_pixels(panel)
    for box in parts(panel, w.Checkbox)[:2]:
        box.value = False
        plot_pixels(panel)


def test_sample_efficiency_explorer_shows_and_trains_later_chapters_methods(monkeypatch):
    from minilab.experiments import grid as grid_runner
    from minilab.experiments import sample_efficiency as se

    ulmfit = [{"task": "rt", "method": m, "n_labels": 100, "seed": s, "error": 0.4} for m in se.METHODS for s in (0, 1)]
    gpt = [{"task": "rt", "method": "gpt", "n_labels": 100, "seed": s, "error": 0.2 + 0.02 * s} for s in (0, 1)]
    routed = []

    def fake_grid_point(task, n_labels, method, seed, *, callbacks=(), **_):
        routed.append(method)
        learner = _fake_learner(steps=6)
        learner.epoch, learner.epochs = 0, 3
        for _ in range(6):
            learner.step += 1
            for cb in callbacks:
                cb.last = 0.0
                cb.after_step(learner)
        return {"task": task, "method": method, "n_labels": 100, "seed": seed, "error": 0.25, "seconds": 1.0,
                "curve": [{"epoch": 1, "train_loss": 0.7}]}

    monkeypatch.setattr(se, "cached_rows", lambda *a, **k: ulmfit)
    monkeypatch.setattr(grid_runner, "cached_rows", lambda task, methods, *a, **k: [r for r in gpt if r["method"] in methods])
    monkeypatch.setattr(grid_runner, "run_point", fake_grid_point)
    monkeypatch.setattr(se, "resolve_labels", lambda task, n: 8000 if n == se.ALL else int(n))
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    panel = widgets.sample_efficiency_explorer("rt", "unused.pt", grid_profile="laptop", more_methods=("gpt",))
    assert "gpt" in text(panel) and "error 21.0% ± 1.0% (2 seeds, cached laptop grid)" in text(panel)
    for box in parts(panel, w.Checkbox)[:len(se.METHODS)]:
        box.value = False                                   # only GPT ticked
    part(panel, w.Button, "train this point").click()
    assert routed == ["gpt"] and "trained here at smoke sizes" in text(panel)
    plot_pixels(panel)


def test_downstream_explorer_keeps_a_live_point_apart_and_reports_each_step(monkeypatch):
    from minilab.experiments import elmo_downstream as ed

    def row(arm, n, seed, acc):
        return {"task": "rt", "method": ed.METHOD_PREFIX + arm, "arm": arm, "n_labels": n, "seed": seed, "accuracy": acc,
                "error": 1 - acc, "seconds": 0.1,
                "curve": [{"epoch": e, "test_accuracy": acc - 0.1 / e} for e in (1, 2, 3)]}

    def fake_cached(arm, n, seed, *a, **k):
        return row(arm, 8000 if n == grid.ALL else n, seed, 0.6 + 0.01 * seed)

    steps, trained = [], []
    monkeypatch.setattr(ed, "cached_point", fake_cached)
    monkeypatch.setattr(ed, "features", lambda kind, path, task, split, log=print: steps.append((kind, split)))
    monkeypatch.setattr(ed, "run_point", lambda arm, n, seed, *a, **k: trained.append(arm) or row(arm, n, seed, 0.9))
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    panel = widgets.downstream_explorer("unused.pt", grid_profile="laptop")
    assert_fits(panel)
    plot_pixels(panel)
    slider = part(panel, w.SelectionSlider)
    assert [v for _, v in slider.options] == [50, 100, 200, 300, 1000, 3000, grid.ALL]
    for value in (300, grid.ALL, 100):
        slider.value = value
        plot_pixels(panel)
    assert "accuracy 61.0% ± 1.0% (3 seeds, cached laptop grid)" in text(panel)
    train = part(panel, w.Button, "train this point")
    train.click()
    train.click()
    assert trained == list(ed.ARMS) and len(steps) == 2 * len(ed.KINDS)
    assert "accuracy 61.0% ± 1.0% (3 seeds, cached laptop grid)" in text(panel)
    assert "accuracy 90.0% (seed 0, trained here at smoke sizes, not in the mean)" in text(panel)
    assert part(panel, w.IntProgress).value == 1000 and "done: 5 arms" in parts(panel, w.HTML)[1].value
    plot_pixels(panel)


def test_source_shows_the_running_code_or_one_part_of_it():
    from minilib.models.elmo import ScalarMix

    whole = viz.source(ScalarMix)
    assert whole.startswith("`minilib.models.elmo.ScalarMix`\n```python\nclass ScalarMix")
    part = viz.source(ScalarMix, start="def forward", stop="def ")
    assert part.splitlines()[2].startswith("def forward") and "class ScalarMix" not in part
    head = viz.source(ScalarMix, stop="def forward")       # stop alone: from the top to it
    assert "class ScalarMix" in head and "def forward" not in head
    with pytest.raises(ValueError, match="not in the source"):
        viz.source(ScalarMix, start="def backward")


# -- chapter 07 ----------------------------------------------------------------------------------
def test_cloze_explorer_shows_both_models_per_blank_and_explains_bad_input():
    from minilib.data.tokenizer import train_bpe, train_wordpiece
    from minilib.models.bert import BERT, bert_config
    from minilib.models.gpt import GPT, gpt_config

    texts = ["The cat sat on the mat.", "A dog barked at the cat.", "The budget would pass."] * 10
    wordpiece, bpe = train_wordpiece(texts, 120, min_char_count=1), train_bpe(texts, 300)
    torch.manual_seed(0)
    bert = BERT(bert_config(wordpiece.vocab_size, "smoke", block_size=32))
    gpt = GPT(gpt_config(bpe.vocab_size, "smoke", block_size=32))
    panel = widgets.cloze_explorer(bert, wordpiece, gpt, bpe, sentence="the [MASK] sat on the [mask] .", k=4)
    assert_fits(panel)
    assert "blank 1:" in text(panel) and "blank 2:" in text(panel) and "⚠" not in text(panel)
    first = plot_pixels(panel)
    blank = part(panel, w.Dropdown)
    assert list(blank.options) == [1, 2]
    blank.value = 2
    assert not np.array_equal(plot_pixels(panel), first)                  # the second blank's bars
    box = part(panel, w.Text)
    for typed, why in [("   ", "is empty"), ("the cat sat", "no [MASK]"), ("the cat " * 40 + "[MASK]", "shorten it")]:
        box.value = typed
        assert why in text(panel)
    box.value = "[MASK] cat sat ."                                        # one blank again, at the very start
    assert list(blank.options) == [1] and "blank 2" not in text(panel) and "⚠" not in text(panel)
    plot_pixels(panel)


def test_league_explorer_shows_each_column_from_the_cache_and_trains_a_point_apart(monkeypatch):
    from minilab.experiments import league

    cells = [{"task": t, "labels": n, "n_labels": 100, "era": era, "method": m,
              "error": None if m == "bert" else 0.2 + 0.01 * i + (0.1 if t == "rt" else 0.0),
              "error_std": None if m == "bert" else 0.01, "seeds": 0 if m == "bert" else 3, "best": i == 0,
              "reason": "not run" if m == "bert" else None}
             for t in league.TASKS for n in league.LABELS for i, (era, m) in enumerate(league.SENTENCE.items())]
    monkeypatch.setattr(league, "table", lambda *a, **k: cells)
    trained = []

    def fake_run_point(task, n_labels, method, seed, *, callbacks=(), **_):
        trained.append((task.name, n_labels, method, seed))
        return {"task": task.name, "method": method, "n_labels": 100, "seed": seed, "error": 0.5, "seconds": 2.0}

    monkeypatch.setattr(grid, "run_point", fake_run_point)
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    panel = widgets.league_explorer()
    assert_fits(panel)
    first = plot_pixels(panel)
    shown = text(panel)
    assert "majority" in shown and "error 20.0% ± 1.0% (3 seeds)  ★ best" in shown and "bert" in shown
    assert "— not run" in shown                                  # the era with no points says so
    part(panel, w.Dropdown, "task").value = "rt"
    assert "error 30.0% ± 1.0% (3 seeds)" in text(panel)
    assert not np.array_equal(first, plot_pixels(panel))         # the redraw is the new column
    part(panel, w.Dropdown, "era").value = "gpt"
    part(panel, w.Button, "train this point").click()
    assert trained == [("rt", league.LABELS[0], "gpt", len(league.SEEDS))]
    assert "error 50.0% (seed 3, trained here at smoke sizes, not in the mean)" in text(panel)
    assert "error 30.0% ± 1.0% (3 seeds)" in text(panel)        # the cached mean is unchanged


# -- issue 39 item 8: the lesson as first opened ---------------------------------------------------
def test_a_bad_input_hides_the_stale_plot_and_a_long_word_is_not_echoed_whole():
    panel = widgets.neighbours_explorer({"toy": _toy_vectors()}, word="king", topn=3)
    image, box = part(panel, w.Image), part(panel, w.Text)
    plot_pixels(panel)
    assert image.layout.display is None
    t0 = time.monotonic()
    box.value = "x" * 3000                                     # a pasted wall of text
    shown = text(panel)
    assert "⚠" in shown and "not in the vocabulary" in shown and "3,000 characters" in shown
    assert len(shown) <= widgets.MAX_MESSAGE + 20 and "x" * (widgets.MAX_ECHO + 1) not in shown
    assert "overflow-wrap:anywhere" in parts(panel, w.HTML)[0].value   # what is shown wraps inside the panel
    assert time.monotonic() - t0 < 2                           # no close-match search over a 3,000-letter word
    assert image.layout.display == "none"                     # the old plot does not pass for this input's answer
    box.value = "apple"
    assert "nearest to 'apple'" in text(panel) and image.layout.display is None
    plot_pixels(panel)


def test_an_error_line_is_cut_and_hides_the_plot():
    slider = w.IntSlider()
    panel = widgets.Panel([slider])

    def draw():
        if slider.value:
            raise ValueError("y" * 5000)
        fig, ax = widgets.figure(4, 2)
        ax.plot([0, 1], [1, 0])
        panel.show(fig)

    slider.observe(panel.update(draw), names="value")
    draw()
    slider.value = 1
    assert len(text(panel.box)) <= widgets.MAX_MESSAGE + 20 and panel.image.layout.display == "none"
    slider.value = 0
    assert panel.image.layout.display is None


def test_a_plot_is_shown_at_its_own_size_and_no_taller_than_the_limit():
    panel = widgets.Panel([])
    assert panel.image.layout.align_self == "flex-start"      # a VBox would stretch it to the panel's width
    assert panel.image.layout.max_width == "100%" and panel.image.layout.height == "auto"
    fig, ax = widgets.figure(6.0, 4.2)                        # lesson 05's attention map: taller than the limit
    ax.imshow(np.eye(8))
    width, height = Image.open(io.BytesIO(widgets.png(fig))).size
    assert height <= widgets.MAX_PLOT_HEIGHT_PX and width == pytest.approx(height * 6.0 / 4.2, abs=2)
    assert int(widgets.MAX_HEIGHT.removesuffix("px")) <= 647  # a 1366×768 laptop's notebook area (issue 39)


def test_token_words_show_subword_tokens_as_text():
    from minilib.data.tokenizer import train_bpe, train_wordpiece

    texts = ["The cat sat on the mat.", "A dog barked at the cat.\nThe budget would pass."] * 10
    bpe = train_bpe(texts, 300)
    ids = bpe.encode("The cat barked at the budget.\nhello")
    assert any("Ġ" in bpe.id_to_token(i) for i in ids)          # what the old labels showed
    words = widgets.token_words(bpe, ids)
    assert not any("Ġ" in t or "Ċ" in t for t in words)
    assert words[:6] == ["The", "cat", "barked", "at", "the", "budget"] and "⏎" in words
    wordpiece = train_wordpiece(texts, 120, min_char_count=1)
    pieces = widgets.token_words(wordpiece, wordpiece.encode("the cat hello"))
    assert pieces[:2] == ["the", "cat"] and not any(p.startswith("##") for p in pieces)


def test_sample_efficiency_explorer_names_the_missing_label_count(monkeypatch):
    from minilab.experiments import sample_efficiency as se

    grid = [{"task": "rt", "method": m, "n_labels": 100, "seed": s, "error": 0.3} for m in se.METHODS for s in (0, 1)]
    monkeypatch.setattr(se, "cached_rows", lambda *a, **k: grid)
    monkeypatch.setattr(se, "resolve_labels", lambda task, n: 8000 if n == se.ALL else int(n))
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    panel = widgets.sample_efficiency_explorer("rt", "unused.pt", grid_profile="laptop")
    slider = part(panel, w.SelectionSlider)
    assert 20 in [v for _, v in slider.options]                # smoke's own label counts are on the slider
    slider.value = 20
    shown = " ".join(text(panel).split())
    assert "no cached laptop points at 20 labels (cached: 100 labels)" in shown, shown
    assert "for these methods" not in shown
    for box in parts(panel, w.Checkbox):
        box.value = False
    assert "tick at least one method" in text(panel)
    plot_pixels(panel)


def test_league_explorer_era_picker_marks_the_era_in_the_text_and_the_plot(monkeypatch):
    from minilab.experiments import league

    not_run = {"ulmfit", "bert"}                               # eras with no cached points in any column
    cells = [{"task": t, "labels": n, "n_labels": 100, "era": era, "method": m,
              "error": None if m in not_run else 0.2 + 0.01 * i, "error_std": None if m in not_run else 0.01,
              "seeds": 0 if m in not_run else 3, "best": i == 0, "reason": "not run" if m in not_run else None}
             for t in league.TASKS for n in league.LABELS for i, (era, m) in enumerate(league.SENTENCE.items())]
    monkeypatch.setattr(league, "table", lambda *a, **k: cells)
    monkeypatch.setenv("MINILIB_PROFILE", "smoke")
    panel = widgets.league_explorer()
    era = part(panel, w.Dropdown, "era")
    first_text, first_plot = text(panel), plot_pixels(panel)
    marked = [line for line in first_text.splitlines() if line.startswith("▶")]
    assert len(marked) == 1 and era.label in marked[0]
    era.value = "gpt"
    marked = [line for line in text(panel).splitlines() if line.startswith("▶")]
    assert len(marked) == 1 and "GPT" in marked[0] and "gpt" in marked[0]
    assert not np.array_equal(first_plot, plot_pixels(panel))  # the picked era's bar is outlined
    era.value = "ulmfit"                                       # an era with no cached points: no bar, but a row
    ulmfit_plot = plot_pixels(panel)
    era.value = "bert"                                         # and another: its row's label turns red instead
    assert [line for line in text(panel).splitlines() if line.startswith("▶")][0].split()[1] == "BERT"
    assert not np.array_equal(ulmfit_plot, plot_pixels(panel))
