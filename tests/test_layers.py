"""minilib's imports run one way (docs/design.md, "Layers"): a module may import its own layer
or a lower one, never a higher one. Read from the source, so a lazy import inside a function
counts too."""
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
    ("minilib.widgets", "minilib.pretrain", "minilib.__main__", "minilib.experiments.cli",
     "minilib.data.cli"),
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
    assert layer_of("minilib.experiments.cli") > layer_of("minilib.experiments.grid")


def tooling_imports(path: Path):
    """Imports of the tooling that lives beside minilib (book/, bench/, tools/), which the core never reads (the
    command line's `bench` is looked up by name in minilib/__main__.py, never imported by the core)."""
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
