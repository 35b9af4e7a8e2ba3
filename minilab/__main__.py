from minilab.cli import main, save_on_signals  # `python -m minilab ...`, the same entry as `python -m minilib ...`

if __name__ == "__main__":
    save_on_signals()
    raise SystemExit(main())
