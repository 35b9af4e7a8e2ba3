"""`python -m minilib data fetch|info|task|tokenizer|datasheet`: get the corpora, see what is there, describe a task,
train a subword vocabulary, write the datasheet."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from minilib import tasks
from minilib.data.sources import SOURCES, DataSourceError, fetch
from minilib.data.tokenizer import add_tokenizer_arguments, tokenizer_command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION")
    p = sub.add_parser("fetch", help="download, verify and unpack sources into the cache")
    p.add_argument("names", nargs="*", metavar="NAME", help=f"sources to fetch: {', '.join(SOURCES)}")
    p.add_argument("--all", action="store_true", help="fetch every source")
    p.add_argument("--force", action="store_true", help="fetch again even if cached")
    p = sub.add_parser("info", help="table of sources: size, licence, citation (fetches what is missing)")
    p.add_argument("--no-fetch", action="store_true", help="only describe sources already in the cache")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p = sub.add_parser("task", help="a labelled task's sizes and class balance (registered name or CSV/TSV path)")
    p.add_argument("task", metavar="NAME|PATH", help="rt, trec, pos, or a CSV/TSV file with a header row")
    tasks.add_arguments(p)
    add_tokenizer_arguments(sub.add_parser("tokenizer", help="train the BPE (GPT) or WordPiece (BERT) vocabulary"))
    p = sub.add_parser("datasheet", help="write the markdown datasheet for the book")
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
    from minilib.data.inventory import format_table, info_table

    rows = info_table(fetch_missing=not args.no_fetch)
    print(json.dumps(rows, indent=1, ensure_ascii=False) if args.json else format_table(rows))
    return 0


def _datasheet(args: argparse.Namespace) -> int:
    from minilib.data.inventory import datasheet_markdown

    text = datasheet_markdown()
    if args.out == "-":
        print(text)
    else:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
