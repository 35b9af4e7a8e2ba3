"""The book's tooling (not part of minilib): `pages` generates the timeline, references, results and
teacher's-guide pages; `build.py` stages them with the lessons and runs Sphinx (`make book`)."""
