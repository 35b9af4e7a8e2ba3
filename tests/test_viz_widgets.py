"""Plots and widgets: the shared lesson panels must draw, fit Zipf's law and never raise."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from minilib import story, viz, widgets


def test_timeline_draws_every_milestone():
    ax = viz.timeline()
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


def test_corpus_explorer_shows_errors_as_a_line(capsys):
    zipfian = [f"w{r}" for r in range(1, 300) for _ in range(3000 // r)]

    def load(name):
        if name == "broken":
            raise FileNotFoundError("cache is empty")
        return zipfian

    panel = widgets.corpus_explorer(load, ["ok", "broken"])
    picker = panel.children[0].children[0]
    capsys.readouterr()
    picker.value = "broken"  # must not raise (outside a kernel, Output prints to stdout)
    assert "FileNotFoundError: cache is empty" in capsys.readouterr().out
    picker.value = "ok"
    shown = capsys.readouterr().out
    assert "distinct words" in shown and "⚠" not in shown


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


def test_analogy_explorer_answers_and_refuses_repeats(capsys):
    panel = widgets.analogy_explorer({"toy": _toy_vectors()}, "man", "king", "woman", topn=1)
    assert "1. queen" in capsys.readouterr().out
    a_box = panel.children[0].children[0]
    a_box.value = "king"  # a == b: a clear line, no traceback
    assert "three different words" in capsys.readouterr().out
    a_box.value = "pear"
    assert "not in the vocabulary" in capsys.readouterr().out


def test_neighbours_explorer_handles_unknown_and_empty(capsys):
    panel = widgets.neighbours_explorer({"toy": _toy_vectors()}, word="king", topn=2)
    assert "nearest to 'king'" in capsys.readouterr().out
    box = panel.children[0].children[0]
    box.value = ""
    assert "type a word" in capsys.readouterr().out
    box.value = "zebra"
    assert "not in the vocabulary" in capsys.readouterr().out


def test_generation_explorer_samples_and_explains_an_empty_prompt(capsys):
    import torch

    from minilib.data import Vocab
    from minilib.models.bigram import BigramLM

    torch.manual_seed(0)
    vocab = Vocab.build([["the", "cat", "sat", "on", "the", "mat"]])
    panel = widgets.generation_explorer({"bigram": BigramLM(len(vocab), 8)}, vocab, prompt="the cat", n_words=5)
    first = capsys.readouterr().out.split("\r")[-1]  # after the Output widget's clear codes
    assert first.startswith("the cat") and len(first.split()) == 7
    box = panel.children[0].children[0]
    box.value = "   "
    assert "has no words" in capsys.readouterr().out
    box.value = "the"
    panel.children[1].children[2].click()  # sample again: a new seed, still no traceback
    assert "⚠" not in capsys.readouterr().out
