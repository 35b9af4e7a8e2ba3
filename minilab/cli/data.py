"""`python -m minilib data fetch|info|task|tokenizer|datasheet`: get the corpora, see what is there, describe a task,
train a subword vocabulary, write the datasheet."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from minilab.cli import subcommands
from minilab.cli.options import task_options
from minilib.data.sources import SOURCES, DataSourceError
from minilab.fetching import fetch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = subcommands(parser, dest="data_command", metavar="ACTION")
    sub.add_parser("fetch", options=_fetch_options, help="download, verify and unpack sources into the cache")
    sub.add_parser("info", options=_info_options,
                   help="table of sources: size, licence, citation (fetches what is missing)")
    sub.add_parser("task", options=_task_options,
                   help="a labelled task's sizes and class balance (registered name or CSV/TSV path)")
    sub.add_parser("tokenizer", options=tokenizer_options, help="train the BPE (GPT) or WordPiece (BERT) vocabulary")
    sub.add_parser("datasheet", options=_datasheet_options, help="write the markdown datasheet for the book")


def _fetch_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAME", help=f"sources to fetch: {', '.join(SOURCES)}")
    p.add_argument("--all", action="store_true", help="fetch every source")
    p.add_argument("--force", action="store_true", help="fetch again even if cached")


def _info_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-fetch", action="store_true", help="only describe sources already in the cache")
    p.add_argument("--json", action="store_true", help="print the table as JSON")


def _task_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", metavar="NAME|PATH", help="rt, trec, pos, or a CSV/TSV file with a header row")
    task_options(p)


def tokenizer_options(p: argparse.ArgumentParser) -> None:
    """Options of `python -m minilib data tokenizer KIND ...`."""
    from minilib.data.tokenizer import KINDS, TOKENIZER_SIZES

    p.add_argument("kind", choices=KINDS, help="bpe (GPT, byte-level) or wordpiece (BERT)")
    p.add_argument("--profile", choices=tuple(TOKENIZER_SIZES), default=None,
                   help="sizes to use (default: $MINILIB_PROFILE or the machine's default)")
    p.add_argument("--vocab-size", type=int, default=None, help="override the profile's vocabulary size")
    p.add_argument("--words", type=int, default=None, help="train on this many words of the train split")
    p.add_argument("--out", type=Path, default=None,
                   help="tokenizer path (default: checkpoints/<kind>-<profile>.tokenizer.json)")
    p.add_argument("--measure", default=None, metavar="V1,V2,...",
                   help="instead of building: compare these vocabulary sizes and write results/tokenizer-<kind>.json")


def _datasheet_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="book/datasheet.md", help="output path (default: %(default)s; '-' for stdout)")


def run(args: argparse.Namespace) -> int:
    try:
        if args.data_command == "fetch":
            return _fetch(args)
        if args.data_command == "info":
            return _info(args)
        if args.data_command == "datasheet":
            return _datasheet(args)
        if args.data_command == "tokenizer":
            return tokenizer_command(args)
        if args.data_command == "task":
            from minilib import tasks

            print(tasks.from_args(args).describe())
            return 0
    except DataSourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("usage: python -m minilib data {fetch,info,task,tokenizer,datasheet} ...  (see --help)", file=sys.stderr)
    return 2


def _fetch(args: argparse.Namespace) -> int:
    if not args.names and not args.all:
        print(f"name the sources to fetch ({', '.join(SOURCES)}) or use --all", file=sys.stderr)
        return 2
    unknown = [n for n in args.names if n not in SOURCES]
    if unknown:
        print(f"unknown source(s): {', '.join(unknown)}; known: {', '.join(SOURCES)}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    for name in (list(SOURCES) if args.all else args.names):
        root = fetch(name, force=args.force)
        print(f"{name:10s} {root}")
    print(f"done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


def _info(args: argparse.Namespace) -> int:
    from minilab.inventory import format_table, info_table

    rows = info_table(fetch_missing=not args.no_fetch)
    print(json.dumps(rows, indent=1, ensure_ascii=False) if args.json else format_table(rows))
    return 0


def _datasheet(args: argparse.Namespace) -> int:
    from minilab.inventory import datasheet_markdown

    text = datasheet_markdown()
    if args.out == "-":
        print(text)
    else:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def tokenizer_command(args: argparse.Namespace) -> int:
    """Build (or, with --measure, compare) a tokenizer (data/tokenizer.py: build_tokenizer, measure_vocab_sizes);
    2 on bad input, with a one-line reason."""
    from minilib import runtime
    from minilab import provenance
    from minilib.data.tokenizer import TOKENIZER_SIZES, build_tokenizer, measure_vocab_sizes

    try:
        profile = args.profile or runtime.profile()
        if args.measure:
            try:
                sizes = [int(s) for s in args.measure.split(",")]
            except ValueError:
                print(f"error: --measure takes comma-separated integers, e.g. 4000,8000,16000 "
                      f"(got {args.measure!r})", file=sys.stderr)
                return 2
            words = args.words or runtime.pick(TOKENIZER_SIZES, profile)["words"]
            rows = measure_vocab_sizes(args.kind, sizes, words)
            from minilab.experiments import store

            out = store.RESULTS / f"tokenizer-{args.kind}.json"
            provenance.write_json(out, {**provenance.stamp(profile=profile, words=words), "rows": rows})
            for r in rows:
                print(f"{args.kind} V={r['vocab_size']:>6,}: {r['tokens_per_word']:.3f} tokens/word, "
                      f"unk {r['unk_rate']:.2%}, embedding share {r['embedding_share']}, {r['train_seconds']} s")
            print(f"wrote {out}", file=sys.stderr)
            return 0
        command = f"python -m minilib data tokenizer {args.kind} --profile {profile}" + "".join(
            f" --{k.replace('_', '-')} {v}" for k, v in (("vocab_size", args.vocab_size), ("words", args.words),
                                                       ("out", args.out)) if v)
        out = build_tokenizer(args.kind, profile, vocab_size=args.vocab_size, words=args.words, out=args.out,
                              command=command)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB) and its provenance JSON")
    return 0
