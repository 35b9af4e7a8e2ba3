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
