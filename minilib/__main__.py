"""`python -m minilib COMMAND ...` — one entry point for data, pretraining, experiments and benchmarks.

Each command lives in its own module with `add_arguments(parser)` and
`run(args) -> int`; this file only dispatches (imports are lazy, so
`python -m minilib data info` does not pay for the models).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from minilib.runtime import UsageError

COMMANDS = {
    "data": ("minilib.data.cli", "fetch, verify and describe the real corpora"),
    "bench": ("bench", "time minilib against a reference implementation (bench/, beside the package: run from the repository)"),
    "pretrain": ("minilib.pretrain", "pretrain a model and write a checkpoint with provenance"),
    "experiment": ("minilib.experiments.cli", "run a lesson's experiment and cache its results"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minilib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = {}
    for name, (module_name, help_text) in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:  # a real missing dependency, not a command yet to be written
                raise
            if name == "bench":          # tooling beside the package: found from the repository's root only
                p = sub.add_parser(name, help=help_text, description=help_text)
                p.add_argument("rest", nargs=argparse.REMAINDER)
            continue
        modules[name] = module
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
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


if __name__ == "__main__":
    sys.exit(main())
