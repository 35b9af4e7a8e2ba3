"""minilib's imports run one way (docs/design.md, "Layers"): a module may import its own layer
or a lower one, never a higher one. Read from the source, so a lazy import inside a function
counts too. The command line (minilib/cli/) is the top layer and the only code that parses options."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "minilib"

# lowest first; a module's layer is the first prefix that matches its dotted name
LAYERS = [
    ("minilib", "minilib.runtime", "minilib.provenance", "minilib.story", "minilib.exercises"),
    ("minilib.data",),
    ("minilib.tasks",),
    ("minilib.models",),
    ("minilib.train",),
    ("minilib.eval", "minilib.generate"),
    ("minilib.recipes",),
    ("minilib.experiments", "minilib.viz"),
    ("minilib.widgets", "minilib.pretrain"),
    ("minilib.cli", "minilib.__main__"),
]


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    assert best is not None, module
    return best


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def minilib_imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("minilib"):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("minilib"):
            for alias in node.names:  # `from minilib import data` imports minilib.data
                yield node.lineno, (f"{node.module}.{alias.name}" if node.module == "minilib" else node.module)


SOURCES = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_run_one_way(path):
    me = module_name(path)
    upward = [f"line {line}: {target}" for line, target in minilib_imports(path) if layer_of(target) > layer_of(me)]
    assert not upward, f"{me} (layer {layer_of(me)}) imports a higher layer: {upward}"


def test_layer_test_can_fail():
    assert layer_of("minilib.models.elmo") < layer_of("minilib.train.learner")
    assert layer_of("minilib.cli.experiment") > layer_of("minilib.experiments.grid")
    assert layer_of("minilib.cli.pretrain") > layer_of("minilib.pretrain")     # the core never imports the CLI


def tooling_imports(path: Path):
    """Imports of the tooling that lives beside minilib (book/, bench/, tools/), which the core never reads (the
    command line's `bench` is looked up by name in minilib/cli/__init__.py, never imported by the core)."""
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        yield from ((node.lineno, n) for n in names if n.split(".")[0] in ("book", "bench", "tools", "gpu_check", "check_results"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_core_never_imports_the_book_or_the_tools(path):
    assert not list(tooling_imports(path)), f"{module_name(path)} imports tooling: {list(tooling_imports(path))}"


def test_the_tooling_check_can_fail(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("import json\nfrom book import pages\n")
    assert list(tooling_imports(src)) == [(2, "book")]


# ----------------------------------------------------------------------------- options are parsed in minilib/cli/ only

OPTION_CALLS = ("add_argument", "add_argument_group", "add_mutually_exclusive_group", "add_subparsers")


def option_parsing(path: Path):
    """Where a module parses command-line options itself: an import of argparse, or a call that adds an option
    to a parser (`p.add_argument(...)`, ...: a parser handed in from elsewhere counts too)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in node.names):
            yield node.lineno, "import argparse"
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "argparse":
            yield node.lineno, "from argparse import"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in OPTION_CALLS:
            yield node.lineno, f".{node.func.attr}("


OUTSIDE_THE_CLI = [p for p in SOURCES if p.relative_to(ROOT).parts[0] != "cli"]


@pytest.mark.parametrize("path", OUTSIDE_THE_CLI, ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_cli_parses_options(path):
    found = [f"line {line}: {what}" for line, what in option_parsing(path)]
    assert not found, f"{module_name(path)} parses options (they belong in minilib/cli/): {found}"


def test_the_option_check_can_fail(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("import json, argparse\nfrom argparse import Namespace\n\n\ndef options(p):\n"
                   "    p.add_argument('--x')\n    p.parse_args([])\n")
    assert list(option_parsing(src)) == [(1, "import argparse"), (2, "from argparse import"), (6, ".add_argument(")]
    assert {p.relative_to(ROOT).parts[0] for p in SOURCES} - {p.relative_to(ROOT).parts[0] for p in OUTSIDE_THE_CLI} \
        == {"cli"}


# ----------------------------------------------------------------------------- data/fetching/ is the bottom of data/

FETCHING = sorted((ROOT / "data" / "fetching").rglob("*.py"))
FETCHING_MAY_IMPORT = ("minilib.data.fetching", "minilib.provenance", "minilib.runtime")


def outside_fetching(path: Path):
    """minilib imports of a module of data/fetching/ other than its own package, provenance and runtime."""
    return [(line, target) for line, target in minilib_imports(path)
            if not any(target == ok or target.startswith(ok + ".") for ok in FETCHING_MAY_IMPORT)]


@pytest.mark.parametrize("path", FETCHING, ids=lambda p: str(p.relative_to(ROOT)))
def test_fetching_imports_nothing_of_minilib_but_provenance_and_runtime(path):
    assert not outside_fetching(path), f"{module_name(path)} imports {outside_fetching(path)}"


def test_the_fetching_check_can_fail(tmp_path):
    assert len(FETCHING) >= 3
    src = tmp_path / "x.py"
    src.write_text("from minilib.provenance import sha256_file\nfrom minilib.data.fetching import parquet\n"
                   "from minilib.data import corpora\nimport minilib.models.gpt\n")
    assert outside_fetching(src) == [(3, "minilib.data"), (4, "minilib.models.gpt")]
