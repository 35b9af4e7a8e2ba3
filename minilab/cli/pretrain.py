"""`python -m minilib pretrain NAME ...`: each pretrainer's options, and the call that runs it.

PRETRAINERS names each model: its help line, a function adding its options, and the command in
minilab/pretrain.py that reads them (`awd_lstm_command(args)`, ...: the pretraining itself lives there and
in minilib/recipes/). minilab/pretrain.py is imported only when a model runs, so `--help` stays quick.
"""
from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from minilab.cli import subcommands
from minilab.cli.options import profile_option


@dataclass(frozen=True)
class Pretrainer:
    help: str
    own_arguments: Callable[[argparse.ArgumentParser], None]   # the options only this model has
    command: str                  # its function in minilab/pretrain.py, called with the parsed options
    subword: bool = False         # reads BPE tokens (--tokenizer) and trains to a compute budget (--budget)

    def add_arguments(self, p: argparse.ArgumentParser, name: str) -> None:
        """Every pretrainer's options in one order: size, data, its own, when to stop, corpus, run."""
        profile_option(p, "size profile")
        p.add_argument("--words", type=int, default=None, help="train words from the corpus (default: per profile; 0 = all)")
        self.own_arguments(p)
        p.add_argument("--max-steps", type=int, default=None,
                       help="stop after this many steps (timing, tests; the run then counts as finished)")
        if self.subword:
            add_budget_argument(p)
        add_corpus_arguments(p, subword=self.subword)
        add_run_arguments(p, name)


# ----------------------------------------------------------------------------- shared pieces

def add_corpus_arguments(p: argparse.ArgumentParser, subword: bool) -> None:
    """--corpus and how to read it (every pretrainer); --tokenizer for the subword models (GPT, BERT)."""
    from minilib.data.corpora import DOCUMENT_UNITS

    p.add_argument("--corpus", nargs="+", metavar="PATH", default=None,
                   help="pretrain on your own text: text files, folders of them (.txt, .md, ...), or - for standard "
                        "input (default: the built-in corpus); the checkpoint goes to your data cache")
    p.add_argument("--documents", choices=DOCUMENT_UNITS, default="block",
                   help="with --corpus, one document per blank-line block (default), per file or per line")
    p.add_argument("--valid-fraction", type=float, default=0.05,
                   help="with --corpus, the share held out for the held-out loss: whole documents when there are "
                        "20 or more, else each document's last words (default: 0.05)")
    p.add_argument("--encoding", default=None, help="with --corpus, the text's encoding (default: UTF-8, or UTF-16 "
                                                    "by its byte-order mark)")
    if subword:
        p.add_argument("--tokenizer", type=Path, default=None,
                       help="reuse this tokenizer: a .tokenizer.json, or a checkpoint whose tokenizer to take (default: "
                            "with --corpus, one trained on its training part at the profile's vocabulary size; "
                            "else the shipped one)")


def add_run_arguments(p: argparse.ArgumentParser, name: str) -> None:
    """The options every pretrainer shares: threads, seed, where to write, resume, progress."""
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (1 is fastest for LSTMs on a busy 2-core CPU)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help=f"checkpoint path (default: checkpoints/{name}-<profile>.pt)")
    p.add_argument("--checkpoint-dir", type=Path, default=None,
                   help="training state for resume (default: .cache/pretrain/<out name>)")
    p.add_argument("--no-resume", action="store_true", help="start over even if a training checkpoint exists")
    p.add_argument("--progress", choices=("console", "off"), default="console")


def add_budget_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=float, default=None, metavar="X",
                   help="train X times the profile's compute (the compute axis): X times the steps, LR held "
                        "then a 20%% cool-down, a snapshot every 1/8 of the profile's steps "
                        "(default out: <name>-<profile>-<X>x.pt)")
    p.add_argument("--warm-start", type=Path, default=None, metavar="CKPT",
                   help="where this run's training state is gone (another machine), start from the weights and step "
                        "of CKPT (checkpoints/compute-axis/<name>-latest.pt, from `experiment compute-axis "
                        "--keep-latest`) with a fresh optimizer")


# ----------------------------------------------------------------------------- each model's own options

def add_awd_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--vocab-size", type=int, default=None, help="words kept, specials included")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--bptt", type=int, default=None)
    p.add_argument("--lr", type=float, default=None, help="peak AdamW learning rate (one-cycle schedule)")
    p.add_argument("--emb-size", type=int, default=None, help="override the profile's embedding size")
    p.add_argument("--hidden-size", type=int, default=None, help="override the profile's LSTM size")
    p.add_argument("--valid-words", type=int, default=None, help="cap the validation words (default: the whole split)")


def add_elmo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--valid-words", type=int, default=None, help="validation words (default: per profile; 0 = all)")
    p.add_argument("--epochs", type=int, default=None)


def add_gpt_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--steps", type=int, default=None, help="optimizer steps of the schedule (default: per profile)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (warm-up, then cosine to 0)")
    p.add_argument("--sentence-window", type=int, default=None, metavar="T",
                   help="train on windows of T tokens that each begin at a sentence start, as a fine-tuned input "
                        "does, with as many more windows a step as keeps its tokens (default: windows of the "
                        "model's context at any offset; default out: ...-sent<T>.pt)")


def add_bert_arguments(p: argparse.ArgumentParser) -> None:
    """BERT's own options (its recipe: recipes/bert.py)."""
    from minilib.data.mlm import PAIRINGS
    from minilib.models.bert import OBJECTIVES

    p.add_argument("--objective", choices=OBJECTIVES, default="mlm+nsp",
                   help="mlm+nsp (BERT), mlm (no NSP) or ltr (the left-to-right twin): paper Table 5")
    p.add_argument("--steps", type=int, default=None,
                   help="optimizer steps of the schedule (default: GPT's compute at this profile)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (warm-up, then linear to 0)")
    p.add_argument("--mask-prob", type=float, default=None,
                   help="share of tokens the masked LM predicts (default: §3.1's 0.15; give --out a name of its own)")
    p.add_argument("--warmup", type=float, default=None, help="share of the steps of linear warm-up (default 0.05)")
    p.add_argument("--pairing", choices=PAIRINGS, default=None,
                   help="how pairs are cut: lines (default: from any sentence, b as long as the real rest), google "
                        "(create_pretraining_data.py's chunks of whole sentences) or doc-sentences (RoBERTa §4.2: "
                        "one segment, with --objective mlm); give --out a name of its own")
    p.add_argument("--clip", type=float, default=None,
                   help="the global gradient-norm clip (default 1.0, the released code's); give --out a name of its own")
    p.add_argument("--nsp-weight", type=float, default=None,
                   help="the NSP loss's weight (default 1, §A.2; 0 trains BERT's pairs on the masked LM alone); "
                        "give --out a name of its own")
    p.add_argument("--shape", default=None, metavar="LAYERSxWIDTH",
                   help="another encoder shape, e.g. 2x128 (heads of 64); it reads GPT's compute in tokens "
                        "(default: the profile's, checkpoints/bert-<profile>.pt; else bert-<profile>-2x128.pt)")


PRETRAINERS: dict[str, Pretrainer] = {
    "awd-lstm": Pretrainer("AWD-LSTM language model (Merity et al. 2017), ULMFiT's stage (a)",
                           add_awd_arguments, "awd_lstm_command"),
    "elmo": Pretrainer("ELMo's char-CNN biLM (Peters et al. 2018)", add_elmo_arguments, "pretrain_elmo_command"),
    "gpt": Pretrainer("GPT-1's Transformer decoder (Radford et al. 2018)", add_gpt_arguments, "pretrain_gpt_command",
                      subword=True),
    "bert": Pretrainer("BERT's Transformer encoder (Devlin et al. 2018): masked LM + next sentence prediction",
                       add_bert_arguments, "pretrain_bert_command", subword=True),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = subcommands(parser, dest="model", metavar="MODEL", required=True)
    for name, p in PRETRAINERS.items():
        sub.add_parser(name, options=partial(p.add_arguments, name=name), help=p.help, description=p.help)


def run(args: argparse.Namespace) -> int:
    return getattr(importlib.import_module("minilab.pretrain"), PRETRAINERS[args.model].command)(args)
