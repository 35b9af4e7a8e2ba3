"""Contextual vs static vectors for one word: does "bank" by a river look like "bank" with money?

Peters et al. (2018) §5.3 and Table 4: the biLM's vector for a word depends on its sentence, so
nearest neighbours of "play" in a sports sentence are sports uses; a static vector is one point per
word whatever the sentence. Here the learner sees it as cosine-similarity matrices between the
occurrences of one word in several sentences, one matrix per biLM layer and one for static vectors.

    m = similarity_matrices(model, "bank", [s for _, s in EXAMPLES["bank"]], static=vectors)
    sense_grouping(m["layer 2"], [sense for sense, _ in EXAMPLES["bank"]])   # > 0: senses group
    plot_similarity(m, EXAMPLES["bank"])

Sense grouping = mean cosine between occurrences of the same sense minus the mean between different
senses (diagonal left out). Static vectors score exactly 0: every occurrence is the same vector.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from minilib.data.words import tokenize

MAX_TOKENS = 60   # longer sentences are refused in the widget: the biLM was trained on 20-token windows,
                  # and a paragraph pasted by mistake would make the heat map unreadable

# (sense, sentence) pairs written for this book, 4 per sense; each sentence uses the word once.
EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "bank": [
        ("river", "We sat on the grassy bank and watched the river flow past."),
        ("river", "The boat drifted toward the muddy bank of the stream."),
        ("river", "Heavy rain made the water rise over the bank of the canal."),
        ("river", "Children fished from the steep bank beside the lake."),
        ("money", "She went to the bank to deposit her salary."),
        ("money", "The bank raised its interest rates on loans this year."),
        ("money", "He opened a savings account at the local bank."),
        ("money", "The central bank printed more money to pay the debt."),
    ],
    "apple": [
        ("fruit", "She peeled an apple and cut it into slices for the pie."),
        ("fruit", "A ripe red apple fell from the tree in the orchard."),
        ("fruit", "He ate an apple with cheese and bread for lunch."),
        ("fruit", "He baked an apple tart with cinnamon and sugar."),
        ("company", "Apple announced a new phone and a faster computer chip."),
        ("company", "Shares of Apple rose after the company reported record profits."),
        ("company", "The software engineers at Apple designed a new operating system."),
        ("company", "Apple sued the rival firm over its smartphone patents."),
    ],
}


def find_word(tokens: Sequence[str], word: str) -> int:
    """Index of the first token equal to `word` (after tokenizing both), or -1."""
    target = tokenize(word)
    if len(target) != 1:
        return -1
    return next((i for i, t in enumerate(tokens) if t == target[0]), -1)


def parse_sentences(text: str, word: str, max_tokens: int = MAX_TOKENS
                    ) -> tuple[str, list[list[str]], list[int], list[str | None]]:
    """Check a widget's input; return (word, token lists, word positions, sense labels or None).

    One sentence per line; an optional "label | sentence" names its sense. Raises ValueError with a
    one-line message saying what to fix: no word, more than one word, no sentences, a sentence without
    the word, or a sentence longer than `max_tokens` tokens."""
    word_tokens = tokenize(word or "")
    if not word_tokens:
        raise ValueError("type the word to compare first (e.g. bank)")
    if len(word_tokens) > 1:
        raise ValueError(f"one word at a time, please (got {word.strip()!r})")
    word = word_tokens[0]
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if len(lines) < 2:
        raise ValueError("type at least two sentences, one per line, each using the word")
    sents, positions, labels = [], [], []
    for n, line in enumerate(lines, 1):
        label, _, sentence = line.rpartition("|") if "|" in line else ("", "", line)
        tokens = tokenize(sentence)
        if len(tokens) > max_tokens:
            raise ValueError(f"sentence {n} has {len(tokens)} tokens; keep each under {max_tokens}")
        i = find_word(tokens, word)
        if i < 0:
            raise ValueError(f"sentence {n} does not contain {word!r}: {sentence[:60]!r}")
        sents.append(tokens)
        positions.append(i)
        labels.append(label.strip() or None)
    return word, sents, positions, labels


def word_vectors(model, sentences: Sequence[Sequence[str]], positions: Sequence[int], static=None
                 ) -> dict[str, torch.Tensor]:
    """The word's vector in each sentence: {"layer 0": (n, D), "layer 1": .., "layer 2": .., "static": (n, d)}.

    "static" is there only if `static` (a WordVectors) knows the word."""
    layers = model.embed([list(s) for s in sentences]).cpu()                  # (L, n, T, D)
    idx = torch.tensor(list(positions))
    out = {f"layer {k}": layers[k, torch.arange(len(idx)), idx] for k in range(layers.shape[0])}
    word = sentences[0][positions[0]]
    if static is not None and word in static:
        out["static"] = torch.from_numpy(np.stack([static.vector(s[i]) for s, i in zip(sentences, positions)]))
    return out


def cosine_matrix(vectors: torch.Tensor) -> np.ndarray:
    """(n, n) cosine similarities between rows."""
    unit = torch.nn.functional.normalize(vectors.float(), dim=-1)
    return (unit @ unit.T).numpy()


def similarity_matrices(model, word: str, sentences: Sequence[str], static=None) -> dict[str, np.ndarray]:
    """Cosine-similarity matrix of `word`'s occurrences in `sentences`, per biLM layer (and static vectors)."""
    word, toks, positions, _ = parse_sentences("\n".join(sentences), word, max_tokens=10_000)
    return {name: cosine_matrix(v) for name, v in word_vectors(model, toks, positions, static).items()}


def sense_grouping(matrix: np.ndarray, labels: Sequence) -> float:
    """Mean similarity between occurrences of the same sense minus between different senses (diagonal out)."""
    labels = np.asarray(labels, dtype=object)
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(len(labels), dtype=bool)
    if not (same & off).any() or not (~same).any():
        raise ValueError("sense grouping needs two or more senses, one of them used at least twice")
    return float(matrix[same & off].mean() - matrix[~same].mean())


def grouping_table(model, static=None, examples: dict = EXAMPLES) -> dict[str, dict[str, float]]:
    """{word: {"layer 0": score, ..., "static": score}} for the built-in example sets."""
    out = {}
    for word, pairs in examples.items():
        labels, sents = zip(*pairs)
        out[word] = {k: sense_grouping(m, labels) for k, m in similarity_matrices(model, word, sents, static).items()}
    return out


def plot_similarity(matrices: dict[str, np.ndarray], labels: Sequence[str] | None = None, word: str = "",
                    axes=None):
    """Heat maps side by side, one per layer (and static), with each panel's sense-grouping score if labelled."""
    import matplotlib.pyplot as plt

    names = list(matrices)
    if axes is None:
        fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.4), squeeze=False)
        axes = axes[0]
    n = len(next(iter(matrices.values())))
    ticks = [f"{i + 1}" + (f" {labels[i]}" if labels and labels[i] else "") for i in range(n)]
    labelled = labels is not None and all(labels) and len(set(labels)) > 1
    # one colour scale for every panel, from the lowest cosine shown: a weak biLM's cosines all sit near 1
    vmin = min(0.9, min(float(m.min()) for m in matrices.values()))
    for ax, name in zip(axes, names):
        im = ax.imshow(matrices[name], vmin=vmin, vmax=1.0, cmap="viridis")
        title = name + (f"\ngrouping {sense_grouping(matrices[name], labels):+.2f}" if labelled else "")
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(n), [str(i + 1) for i in range(n)], fontsize=7)
        ax.set_yticks(range(n), ticks if ax is axes[0] else [""] * n, fontsize=7)
    axes[-1].figure.colorbar(im, ax=list(axes), shrink=0.8, label="cosine")
    if word:
        axes[0].figure.suptitle(f"{word!r} in {n} sentences: cosine between its vectors", fontsize=10)
    return axes
