# `python -m minilib ...`: the command line lives in the lab, minilab/cli/. The one module of minilib that imports
# the lab (tests/test_layers.py): it is the console entry, never imported by the core.
from minilab.cli import main, save_on_signals

if __name__ == "__main__":
    save_on_signals()
    raise SystemExit(main())
