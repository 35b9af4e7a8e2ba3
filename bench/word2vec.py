"""`python -m minilib bench word2vec`: minilib SGNS vs gensim's Word2Vec (sg=1), same text, one run.

minilib draws its noise words once per centre by default (`--negatives shared`, Ji et al. 2016:
the same expected gradient, and a centre's output rows stay in cache for all its context words);
`--negatives per-pair` times the papers' way, gensim's. On a CPU minilib runs word2vec.c's update
compiled (`--engine compiled`, models/word2vec_compiled.py); `--engine hogwild` times the tensor step."""
from __future__ import annotations

import argparse
import os
import statistics
import time


def word2vec_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--words", type=int, default=2_000_000,
                   help="words of the pretraining corpus (train split) to train on (default 2,000,000)")
    p.add_argument("--epochs", type=int, default=5, help="passes over the corpus (default 5)")
    p.add_argument("--dim", type=int, default=100, help="vector size (default 100)")
    p.add_argument("--window", type=int, default=5, help="largest context distance (default 5)")
    p.add_argument("--negative", type=int, default=5, help="noise words per pair (default 5)")
    p.add_argument("--min-count", type=int, default=5, help="drop words seen fewer times (default 5)")
    p.add_argument("--sample", type=float, default=1e-3, help="subsampling threshold (default 1e-3)")
    p.add_argument("--lr", type=float, default=0.025, help="starting learning rate for both (default 0.025)")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="worker threads for both: minilib's Hogwild workers and gensim's workers (default: cores)")
    p.add_argument("--batch-size", type=int, default=4096, help="minilib pairs per step (default 4096)")
    p.add_argument("--negatives", choices=("shared", "per-pair"), default="shared",
                   help="minilib's noise words: shared by the context words of a centre (Ji et al. 2016, the "
                        "faster step; default) or drawn for each pair (the papers' and gensim's way)")
    p.add_argument("--engine", choices=("auto", "compiled", "hogwild", "learner"), default="auto",
                   help="minilib's step and loop: compiled (word2vec.c's pair-by-pair update, numba, in Hogwild "
                        "workers), hogwild (the tensor sgd_step in those workers) or learner (minilib.train.Learner); "
                        "auto: compiled on a CPU (default)")
    p.add_argument("--device", default=None, help="minilib device: cpu, cuda, mps (default: best available)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=1,
                   help="train each this many times, alternating which goes first; report medians (default 1)")
    p.add_argument("--out", default=None, help="also write the results as JSON (with a provenance stamp) here")


def bench_word2vec(args: argparse.Namespace) -> int:
    """Train minilib SGNS and gensim Word2Vec (sg=1) with the same hyperparameters on the same text;
    compare words/s and WordSim-353 Spearman (scored by the same minilib function)."""
    try:
        import gensim  # noqa: F401  (checked here so the message comes before minutes of loading)
    except ImportError:
        print("bench word2vec needs gensim, the reference implementation: pip install -e .[dev]")
        return 2
    import numpy as np
    import torch

    from minilib import data, runtime
    from minilab import provenance
    from minilib.eval.similarity import analogy, similarity_spearman
    from minilab.experiments.static_vectors import StaticVectorsConfig, corpus_sentences, train_gensim
    from minilib.models.word2vec import Word2VecConfig
    from minilib.recipes.word2vec import train_word2vec

    t0 = time.perf_counter()
    sentences = corpus_sentences(args.words)  # the same lines lesson 01 trains on
    vocab = data.Vocab.build(sentences, min_count=1, specials=())
    token_ids = [np.asarray(vocab.encode(s), dtype=np.int64) for s in sentences]
    raw_words = sum(len(s) for s in sentences)
    pairs, questions = data.wordsim353(), data.google_analogies()
    device = runtime.device(args.device)
    print(f"corpus: {raw_words:,} tokens ({args.words:,} words of the pretraining corpus), {len(sentences):,} lines, "
          f"{int((vocab.counts >= args.min_count).sum()):,} words with count >= {args.min_count}  "
          f"(loaded in {time.perf_counter() - t0:.0f}s)")
    print(f"settings: skip-gram, dim {args.dim}, window {args.window}, negative {args.negative}, "
          f"sample {args.sample:g}, min_count {args.min_count}, epochs {args.epochs}, lr {args.lr}, "
          f"threads {args.threads}; minilib engine {args.engine} on {device}, torch {torch.__version__}, "
          f"noise words {args.negatives} "
          f"({'one set per centre, Ji et al. 2016' if args.negatives == 'shared' else 'per pair, as gensim'})")

    reference = StaticVectorsConfig(words=args.words, epochs=args.epochs, dim=args.dim, window=args.window,
                                    negative=args.negative, sample=args.sample, min_count=args.min_count,
                                    seed=args.seed)

    def train_minilib():
        config = Word2VecConfig(dim=args.dim, window=args.window, negative=args.negative, sample=args.sample,
                                min_count=args.min_count, epochs=args.epochs, lr=args.lr,
                                batch_size=args.batch_size, shared_negatives=args.negatives == "shared", seed=args.seed)
        cpu_start = time.process_time()
        result = train_word2vec(token_ids, vocab.counts, config, words=vocab.itos, device=device, progress=False,
                                engine=args.engine, threads=args.threads)
        return result.vectors, result.train_seconds, time.process_time() - cpu_start

    # Other jobs on a shared machine slow runs unequally: --repeats alternates the order and
    # takes medians; CPU seconds (all threads) beside wall seconds show how much of the machine
    # each run got.
    runs: dict[str, list] = {"minilib": [], "gensim": []}
    for r in range(args.repeats):
        for name in (("gensim", "minilib") if r % 2 == 0 else ("minilib", "gensim")):
            if name == "gensim":
                vectors, seconds, cpu = train_gensim(sentences, reference, args.lr, args.threads)
            else:
                vectors, seconds, cpu = train_minilib()
            runs[name].append((seconds, cpu, vectors))
            print(f"  run {r + 1}/{args.repeats} {name:8s} {seconds:6.1f}s (cpu {cpu:6.1f}s)  "
                  f"{raw_words * args.epochs / seconds:9,.0f} words/s", flush=True)

    rows = {}
    for name, entries in runs.items():
        seconds = statistics.median(e[0] for e in entries)
        cpu = statistics.median(e[1] for e in entries)
        wps = raw_words * args.epochs / seconds
        vectors = entries[-1][2]
        sim = similarity_spearman(vectors, pairs)
        ana = analogy(vectors, questions)
        rows[name] = {"seconds": seconds, "cpu_seconds": cpu, "words_per_s": wps, "wordsim": sim.rho,
                      "wordsim_pairs": sim.n_used, "analogy": ana.accuracy, "analogy_questions": ana.n_used,
                      "vocab": len(vectors), "runs_seconds": [e[0] for e in entries]}
        print(f"{name:8s} {seconds:6.1f}s (cpu {cpu:6.1f}s)  {wps:9,.0f} words/s  WordSim-353 rho {sim.rho:.3f} "
              f"({sim.n_used}/{len(pairs)} pairs)  analogies {ana.accuracy:.3f} ({ana.n_used}/{ana.n_total})  "
              f"vocab {len(vectors):,}")
    ours_wps, gensim_wps = rows["minilib"]["words_per_s"], rows["gensim"]["words_per_s"]
    ratio = ours_wps / gensim_wps
    if args.out:
        provenance.write_json(args.out, {"bench": "word2vec", "args": vars(args), "raw_words": raw_words,
                                         "results": rows, "speed_ratio": ratio,
                                         "provenance": provenance.stamp(seed=args.seed)})
    print(f"word2vec: minilib_words_per_s={ours_wps:.0f} gensim_words_per_s={gensim_wps:.0f} "
          f"speed_ratio={ratio:.2f} wordsim_minilib={rows['minilib']['wordsim']:.3f} "
          f"wordsim_gensim={rows['gensim']['wordsim']:.3f}")
    return 0
