"""`python -m minilib COMMAND ...` — one entry point for data, pretraining, experiments and benchmarks
(`python -m minilab COMMAND ...` is the same entry; minilib/__main__.py hands off to this package).

The command line is this package, and only this package parses options (tests/test_layers.py): one module
per command, each with `add_arguments(parser)` and `run(args) -> int` — `data` (cli/data.py), `pretrain`
(cli/pretrain.py), `experiment` (cli/experiment.py), and `bench` (bench/, beside the package, found by name
from the repository's root). Options shared by several commands are in cli/options.py. What a command
runs lives below, in the layer it belongs to, and reads the parsed namespace only (an experiment's
`cli_run(args, name)`, a pretrainer's `*_command(args)`, `tasks.from_args(args)`).

A sub-command's options are added only when it is named (`Subcommands`), so `python -m minilib data info`
never imports what `experiment` or `pretrain` needs to describe theirs.
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys
from typing import Callable

from minilib.runtime import UsageError

COMMANDS = {
    "data": ("minilab.cli.data", "fetch, verify and describe the real corpora"),
    "bench": ("bench", "time minilib against a reference implementation (bench/, beside the package: run from the repository)"),
    "pretrain": ("minilab.cli.pretrain", "pretrain a model and write a checkpoint with provenance"),
    "experiment": ("minilab.cli.experiment", "run a lesson's experiment and cache its results"),
}


class Subcommands(argparse._SubParsersAction):
    """Sub-parsers whose options are added when one is chosen: `add_parser(name, options=fill, ...)` keeps
    `fill(parser)` until `name` is on the command line. Help lists every name and its help line as before."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._fills: dict[str, Callable[[argparse.ArgumentParser], None]] = {}

    def add_parser(self, name, options: Callable[[argparse.ArgumentParser], None] | None = None, **kwargs):
        parser = super().add_parser(name, **kwargs)
        if options is not None:
            self._fills[name] = options
        return parser

    def __call__(self, parser, namespace, values, option_string=None):
        fill = self._fills.pop(values[0], None)           # argparse has checked the name against choices
        if fill is not None:
            fill(self.choices[values[0]])
        super().__call__(parser, namespace, values, option_string)


def subcommands(parser: argparse.ArgumentParser, **kwargs) -> Subcommands:
    """parser.add_subparsers(**kwargs) whose sub-parsers fill their options lazily (Subcommands)."""
    return parser.add_subparsers(action=Subcommands, **kwargs)


def _command_options(name: str, module_name: str, modules: dict):
    def fill(p: argparse.ArgumentParser) -> None:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:  # a real missing dependency, not a command yet to be written
                raise
            if name == "bench":          # tooling beside the package: found from the repository's root only
                p.add_argument("rest", nargs=argparse.REMAINDER)
            return
        modules[name] = module
        module.add_arguments(p)
    return fill


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def save_on_signals() -> None:
    """Make Ctrl-C, `kill -INT` and `kill` (SIGTERM) end a command as Ctrl-C does in a terminal: a training run
    saves its state, to resume later. A shell starts a background job with SIGINT ignored, and Python then
    never raises KeyboardInterrupt, so `python -m minilib` sets both handlers itself."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minilib", description=__doc__.splitlines()[0])
    sub = subcommands(parser, dest="command", metavar="COMMAND")
    modules = {}
    for name, (module_name, help_text) in COMMANDS.items():
        sub.add_parser(name, options=_command_options(name, module_name, modules), help=help_text,
                       description=help_text)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command not in modules:
            raise UsageError(f"`{args.command}` lives in the repository's {args.command}/ folder, beside the package: "
                             f"run `python -m minilib {args.command}` from the repository's root")
        return int(modules[args.command].run(args) or 0)
    except UsageError as exc:  # the user's mistake: one line naming the fix (DataSourceError is the data's)
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)   # one line, however the message was laid out
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
