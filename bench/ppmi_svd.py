"""`python -m minilib bench ppmi-svd`: minilib's randomized SVD of lesson 01's PPMI matrix vs the libraries'.

The same sparse matrix (the laptop profile's static-vectors corpus), the same rank: minilib's
`models.ppmi.randomized_svd` (Halko et al. 2011, Alg. 4.4), `torch.svd_lowrank` (the same algorithm on
a sparse COO tensor) and `scipy.sparse.linalg.svds` (ARPACK's exact truncated SVD, the reference).
Reports seconds and each approximation's largest relative error on the top singular values."""
from __future__ import annotations

import argparse
import time


def ppmi_svd_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="laptop", help="the static-vectors corpus size to build the matrix from")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as lesson 01 runs it)")


def bench_ppmi_svd(args: argparse.Namespace) -> int:
    import numpy as np
    import scipy.sparse.linalg as sla
    import torch

    from minilib import data, runtime
    from minilib.data.skipgram import prepare_corpus
    from minilab.experiments.static_vectors import SIZES, corpus_sentences
    from minilib.models.ppmi import PPMIConfig, cooccurrence, ppmi, randomized_svd

    torch.set_num_threads(args.threads)
    size = SIZES[args.profile]
    sentences = corpus_sentences(size.words)
    vocab = data.Vocab.build(sentences, min_count=1, specials=())
    ids = [np.asarray(vocab.encode(s), dtype=np.int64) for s in sentences]
    config = PPMIConfig(dim=size.dim, window=size.window, min_count=size.min_count, seed=size.seed)
    corpus = prepare_corpus(ids, vocab.counts, vocab.itos, config.min_count)
    matrix = ppmi(cooccurrence(corpus, config.window, config.dynamic_window), config.cds, config.neg)
    print(f"{runtime.cpu_name()}, {args.threads} thread(s): PPMI {matrix.shape[0]:,} x {matrix.shape[1]:,}, "
          f"{matrix.nnz:,} nonzeros, rank {config.dim}")

    def timed(fn):
        start = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - start

    (_, mine, _), mine_s = timed(lambda: randomized_svd(matrix, config.dim, config.power_iterations,
                                                         config.oversample, config.seed))
    entries = matrix.tocoo()
    coo = torch.sparse_coo_tensor(torch.from_numpy(np.vstack([entries.row, entries.col]).astype(np.int64)),
                                  torch.from_numpy(entries.data.astype(np.float32)), matrix.shape,
                                  check_invariants=False)
    torch.manual_seed(config.seed)
    (_, low, _), low_s = timed(lambda: torch.svd_lowrank(coo, q=config.dim + config.oversample,
                                                          niter=config.power_iterations))
    (_, exact, _), exact_s = timed(lambda: sla.svds(matrix.astype(np.float32), k=config.dim, random_state=config.seed))
    exact = np.sort(exact)[::-1]
    mine_err = float(np.max(np.abs(mine - exact) / exact))
    low_err = float(np.max(np.abs(low.numpy()[:config.dim] - exact) / exact))
    print(f"minilib randomized_svd {mine_s:.1f} s (top-{config.dim} singular values within {mine_err:.1%} of exact); "
          f"torch.svd_lowrank {low_s:.1f} s ({low_err:.1%}); scipy svds {exact_s:.1f} s (exact)")
    print(f"ppmi-svd: minilib_s={mine_s:.2f} svd_lowrank_s={low_s:.2f} svds_s={exact_s:.2f} "
          f"minilib_max_rel_err={mine_err:.4f} svd_lowrank_max_rel_err={low_err:.4f}")
    return 0
