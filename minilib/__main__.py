from minilib.cli import main, save_on_signals  # `python -m minilib ...`: the command line lives in minilib/cli/

if __name__ == "__main__":
    save_on_signals()
    raise SystemExit(main())
