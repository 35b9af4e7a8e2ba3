"""Contextual vs static vectors for one word (minilab.experiments.contextual) and its widget."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch

from minilab import widgets
from minilib.data.vectors import WordVectors
from minilab.experiments import contextual
from minilib.models.elmo import BiLM, ELMoConfig
from panels import text


@pytest.fixture(scope="module")
def tiny_bilm():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)          # see conftest.one_thread: a busy 2-core machine stalls on two
    torch.manual_seed(0)
    yield BiLM(ELMoConfig(filters=((1, 4), (2, 4)), n_highway=1, cells=16, proj=8, dropout=0.0, vocab_size=50)).eval()
    torch.set_num_threads(threads)


def static_toy():
    return WordVectors(["the", "bank", "river"], np.eye(3, dtype=np.float32))


def test_parse_sentences_reads_labels_and_positions():
    word, toks, pos, labels = contextual.parse_sentences("river | The bank of the river\nWe robbed a Bank.", " Bank ")
    assert word == "bank" and pos == [1, 3] and labels == ["river", None] and toks[1][-1] == "."


@pytest.mark.parametrize("text, word, message", [
    ("the bank\na bank", "", "type the word"),
    ("the bank\na bank", "river bank", "one word at a time"),
    ("", "bank", "at least two sentences"),
    ("   \n  ", "bank", "at least two sentences"),
    ("the bank\nthe shore", "bank", "sentence 2 does not contain 'bank'"),
    ("the bank\n" + "bank " * 61, "bank", "sentence 2 has 61 tokens"),
])
def test_parse_sentences_messages(text, word, message):
    with pytest.raises(ValueError, match=message):
        contextual.parse_sentences(text, word)


def test_sense_grouping_hand_example():
    m = np.array([[1.0, 0.8, 0.1], [0.8, 1.0, 0.3], [0.1, 0.3, 1.0]])
    # within: (0.8 + 0.8) / 2 = 0.8; across: (0.1 + 0.3 + 0.1 + 0.3) / 4 = 0.2
    assert contextual.sense_grouping(m, ["a", "a", "b"]) == pytest.approx(0.6)
    with pytest.raises(ValueError):
        contextual.sense_grouping(m, ["a", "b", "c"])


def test_static_vectors_group_nothing_and_layers_differ(tiny_bilm):
    labels, sents = zip(*contextual.EXAMPLES["bank"])
    m = contextual.similarity_matrices(tiny_bilm, "bank", sents, static=static_toy())
    assert list(m) == ["layer 0", "layer 1", "layer 2", "static"] and m["layer 1"].shape == (8, 8)
    np.testing.assert_allclose(m["static"], 1.0, atol=1e-6)
    assert contextual.sense_grouping(m["static"], labels) == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(m["layer 0"], 1.0, atol=1e-5)    # char-CNN layer: same word, same vector
    assert m["layer 1"].min() < 0.999                           # the LSTM layers see the context


def test_every_example_sentence_uses_its_word_once():
    for word, pairs in contextual.EXAMPLES.items():
        assert len({s for s, _ in pairs}) >= 2
        for _, sentence in pairs:
            assert contextual.find_word(contextual.tokenize(sentence), word) >= 0


@pytest.mark.data
def test_contextual_explorer_messages_never_a_traceback(tiny_bilm):
    panel = widgets.contextual_explorer(tiny_bilm, static=static_toy())
    assert "sense grouping" in text(panel)
    box, sentences = panel.children[0], panel.children[1]
    sentences.value = "the bank\nthe shore"
    assert "⚠ ValueError: sentence 2 does not contain 'bank'" in text(panel)
    sentences.value = ""
    assert "at least two sentences" in text(panel)
    sentences.value = "the bank\n" + "bank " * 100
    assert "keep each under 60" in text(panel)
    sentences.value, box.value = "a bank\nthe bank", "   "
    assert "type the word" in text(panel)
    box.value = "bank"
    shown = text(panel)
    assert "⚠" not in shown and "sense grouping" not in shown   # no labels: heat maps only
