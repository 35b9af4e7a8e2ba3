"""`python -m minilib bench NAME`: minilib against a reference implementation, same data, one run.

    python -m minilib bench word2vec --words 2000000 --epochs 5

Each bench is an entry in BENCHES: a function adding its options and a function
running it. A bench prints what it measured and ends with exactly one summary
line, `NAME: key=value ...`, for scripts and issues to quote. Reference
implementations (gensim, ...) are dev dependencies: `pip install -e .[dev]`.
Timings on a shared machine are noisy; compare numbers from the same run.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from bench.awd_lstm import awd_lstm_arguments, bench_awd_lstm
from bench.bert import bench_bert, bert_arguments
from bench.gpt import bench_gpt, gpt_arguments
from bench.ppmi_svd import bench_ppmi_svd, ppmi_svd_arguments
from bench.word2vec import bench_word2vec, word2vec_arguments


@dataclass(frozen=True)
class Bench:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


BENCHES: dict[str, Bench] = {
    "word2vec": Bench("minilib skip-gram (SGNS) vs gensim Word2Vec: words/s and WordSim-353",
                      word2vec_arguments, bench_word2vec),
    "awd-lstm": Bench("AWD-LSTM training step (all regularisers on) vs a plain nn.LSTM LM of the same size: tok/s",
                      awd_lstm_arguments, bench_awd_lstm),
    "gpt": Bench("minilib TransformerLM vs HF GPT2LMHeadModel (same config, weights, data, AdamW): tok/s, MFU",
                 gpt_arguments, bench_gpt),
    "bert": Bench("minilib BERT masked-LM step vs HF BertForMaskedLM (same config, weights, data, AdamW): tok/s",
                  bert_arguments, bench_bert),
    "ppmi-svd": Bench("minilib's randomized SVD of lesson 01's PPMI matrix vs torch.svd_lowrank and scipy svds: s, error",
                      ppmi_svd_arguments, bench_ppmi_svd),
}


# -- the `python -m minilib bench` command ----------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="name", metavar="NAME", required=True,
                                help=", ".join(f"{name}: {b.help}" for name, b in BENCHES.items()))
    for name, bench in BENCHES.items():
        bench.add_arguments(sub.add_parser(name, help=bench.help, description=bench.help))


def run(args: argparse.Namespace) -> int:
    return BENCHES[args.name].run(args)
