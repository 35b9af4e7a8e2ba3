"""minilab: the lab that runs *The Pretraining Code* on top of the teaching core, `minilib`.

    cli/         the command line, `python -m minilib` (or `python -m minilab`): the only code that parses options
    provenance   stamps (commit, command), what a lesson read, results written only when they change
    fetching     each data source fetched by its registry's client, checked, unpacked into the data cache
    inventory    what the data cache holds: `data info`, the datasheet
    experiments/ each lesson's experiment (one file each) and what runs them: store, grid, queue, league, compute
    pretrain     each pretrainer's command, read from its parsed options
    shipped      which checkpoint each model's methods fine-tune
    story, exercises, widgets   the book's milestones and timeline, a lesson's checks, its panels

Importing the lab sets it up for a run, once, here: OpenMP threads wait passively, and the core's checkpoints
are stamped with the lab's provenance (commit and command line).
"""
import os as _os

# On a busy 2-core machine OpenMP's default spin-waiting makes small torch ops
# ~20x slower with two threads (measured here); passive waiting costs nothing
# measurable when the machine is idle. Only effective if set before torch is
# imported, so the Makefile exports it too.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from minilib import files as _files  # noqa: E402
from minilab import provenance as _provenance  # noqa: E402

_files.stamp_with(_provenance.stamp)
