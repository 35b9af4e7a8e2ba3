"""minilib: the small PyTorch library behind *The Pretraining Code*, the teaching core a learner reads.

    runtime      device, size profile (smoke | laptop | full), seeding, autocast, the stamp a checkpoint carries
    files        atomic writes, JSON, sha256, how a JSON names a file
    data         real corpora read from the data cache, splits, tokenizers, batching
    tasks        labelled tasks as data
    models       word2vec, LSTM LMs, ELMo, AWD-LSTM, Transformer, GPT, BERT
    train        one fit loop: progress, history, schedules, param groups, checkpoints, DDP
    eval         perplexity, similarity/analogy, probes, classification
    recipes      how each model is pretrained or fine-tuned
    generate     sampling
    viz          plots the lessons share

The lab that runs it (the command line, provenance, fetching, the lessons' experiments and widgets) is the
package beside it, `minilab`; minilib imports nothing of it (tests/test_layers.py), and importing minilib
changes no global state.
"""
__version__ = "0.1.0"
