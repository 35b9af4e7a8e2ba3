"""Options that several commands share: how to read a user's CSV as a task, which size profile."""
from __future__ import annotations

import argparse


def task_options(p: argparse.ArgumentParser) -> None:
    """How to read a user's CSV/TSV as a task (ignored for a registered name); tasks.from_args reads them."""
    from minilib.tasks import METRICS

    p.add_argument("--text-column", default="text", help="CSV column holding the text (default: text)")
    p.add_argument("--label-column", default="label", help="CSV column holding the class (default: label)")
    p.add_argument("--text-b-column", default=None, help="second text column: makes a pair task")
    p.add_argument("--test-file", default=None, help="a separate CSV/TSV test file (default: hold out a fraction)")
    p.add_argument("--test-fraction", type=float, default=0.2, help="rows held out for test when no --test-file")
    p.add_argument("--metric", default=None, choices=METRICS,
                   help="what a CSV task is scored by (default: balanced_accuracy when its rarest class has under "
                        "half its share at balance, else accuracy)")
    p.add_argument("--encoding", default=None,
                   help="the CSV's text encoding, e.g. cp1252 or latin-1 (default: UTF-8, or UTF-16 by its byte-order mark)")


def profile_option(p: argparse.ArgumentParser, what: str = "sizes") -> None:
    """--profile smoke|laptop|full, `what` it picks (help: "<what> (default: $MINILIB_PROFILE or the device's default)")."""
    from minilib.runtime import PROFILES

    p.add_argument("--profile", choices=PROFILES, default=None,
                   help=f"{what} (default: $MINILIB_PROFILE or the device's default)")
