from minilib.cli import main  # `python -m minilib ...`: the command line lives in minilib/cli/
if __name__ == "__main__": raise SystemExit(main())  # noqa: E701
