"""Two packages, one direction (docs/design.md, "Layers"): `minilib`, the teaching core, imports nothing of
`minilab`, the lab that runs it; inside each, a module may import its own layer or a lower one, never a higher
one. Read from the source, so a lazy import inside a function counts too. The one exception is
minilib/__main__.py, the console entry (`python -m minilib ...`), which hands off to the lab's command line. The
command line (minilab/cli/) is the top layer and the only code that parses options. Importing the core changes no
global state, its top-level imports have no cycle, and nothing in it is registered as a side effect of importing."""
import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORE, LAB = REPO / "minilib", REPO / "minilab"
ENTRY = CORE / "__main__.py"             # the console entry: the one module of minilib that imports the lab

# lowest first; a module's layer is the longest prefix that matches its dotted name. Every lab layer is above
# every core layer.
LAYERS = [
    ("minilib", "minilib.runtime", "minilib.files"),
    ("minilib.data",),
    ("minilib.tasks",),
    ("minilib.models",),
    ("minilib.train",),
    ("minilib.eval", "minilib.generate"),
    ("minilib.recipes",),
    ("minilib.viz",),
    # the lab
    ("minilab", "minilab.provenance", "minilab.story", "minilab.exercises", "minilab.fetching", "minilab.inventory",
     "minilab.shipped"),
    ("minilab.experiments",),
    ("minilab.widgets", "minilab.pretrain"),
    ("minilab.cli", "minilab.__main__", "minilib.__main__"),
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
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_imports(path: Path, packages=("minilib", "minilab"), top_level_only: bool = False):
    """(line, module) for each import of `packages` in the file; `top_level_only`: those that run when the module
    is imported (not inside a function)."""
    tree = ast.parse(path.read_text())
    nodes = _top_level(tree) if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in packages:
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level \
                and node.module.split(".")[0] in packages:
            for alias in node.names:  # `from minilib import data` imports minilib.data
                sub = f"{node.module}.{alias.name}"
                yield node.lineno, (sub if node.module in packages or _is_module(sub) else node.module)


def _is_module(dotted: str) -> bool:
    base = REPO.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _top_level(tree: ast.AST):
    """The nodes that run at import: everything but the bodies of functions (a class body runs)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                                ast.Lambda)))


CORE_SOURCES = sorted(CORE.rglob("*.py"))
LAB_SOURCES = sorted(LAB.rglob("*.py"))
SOURCES = CORE_SOURCES + LAB_SOURCES


def _id(p: Path) -> str:
    return str(p.relative_to(REPO))


@pytest.mark.parametrize("path", SOURCES, ids=_id)
def test_imports_run_one_way(path):
    me = module_name(path)
    upward = [f"line {line}: {target}" for line, target in package_imports(path) if layer_of(target) > layer_of(me)]
    assert not upward, f"{me} (layer {layer_of(me)}) imports a higher layer: {upward}"


def test_layer_test_can_fail():
    assert layer_of("minilib.models.elmo") < layer_of("minilib.train.learner")
    assert layer_of("minilab.cli.experiment") > layer_of("minilab.experiments.grid")
    assert layer_of("minilab.cli.pretrain") > layer_of("minilab.pretrain")     # nothing below the CLI imports it
    assert max(layer_of(m) for p in LAYERS for m in p if m.startswith("minilib") and m != "minilib.__main__") \
        < min(layer_of(m) for p in LAYERS for m in p if m.startswith("minilab"))


# ----------------------------------------------------------------------------- the core never imports the lab

def lab_imports(path: Path):
    """(line, module) for each import of minilab in the file, lazy ones included."""
    return list(package_imports(path, packages=("minilab",)))


@pytest.mark.parametrize("path", [p for p in CORE_SOURCES if p != ENTRY], ids=_id)
def test_the_core_never_imports_the_lab(path):
    assert not lab_imports(path), f"{module_name(path)} imports the lab: {lab_imports(path)}"


def test_the_lab_check_can_fail(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("import json\nfrom minilib import data\n\n\ndef f():\n    import minilab.provenance\n"
                   "    from minilab.experiments import grid\n    from minilab import story\n")
    assert lab_imports(src) == [(6, "minilab.provenance"), (7, "minilab.experiments.grid"), (8, "minilab.story")]
    assert lab_imports(ENTRY), "the console entry hands off to minilab.cli"


def global_state_after(imports: str) -> dict:
    """In a fresh interpreter that looks like a notebook's kernel (IPython loaded, a shell running), the
    environment variables and audit hooks that importing `imports` (Python source) adds or changes."""
    probe = textwrap.dedent(f"""\
        import json, os, sys, types
        added = []
        sys.addaudithook(lambda event, args: added.append(event) if event == "sys.addaudithook" else None)
        sys.modules["IPython"] = types.SimpleNamespace(get_ipython=lambda: object())   # as in a lesson's kernel
        before = dict(os.environ)
        exec({imports!r})
        after = dict(os.environ)
        print(json.dumps({{"env": {{k: after.get(k) for k in set(before) | set(after) if before.get(k) != after.get(k)}},
                          "audit_hooks_added": len(added)}}))
    """)
    env = {k: v for k, v in __import__("os").environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


CORE_MODULES = sorted(module_name(p) for p in CORE_SOURCES if p != ENTRY)


def test_importing_the_core_changes_no_global_state():
    """Every module of minilib imported: os.environ as it was, no audit hook installed."""
    state = global_state_after(f"import importlib\nfor m in {CORE_MODULES!r}:\n    importlib.import_module(m)")
    assert state == {"env": {}, "audit_hooks_added": 0}, state


def test_the_global_state_check_can_fail():
    """The lab sets OpenMP's wait policy and, in a notebook, records what the lesson reads: the probe sees both."""
    state = global_state_after("import minilab")
    assert state["env"] == {"OMP_WAIT_POLICY": "PASSIVE"} and state["audit_hooks_added"] == 1, state


# ----------------------------------------------------------------------------- no import cycles in the core

def import_graph(paths) -> dict[str, set[str]]:
    """module -> the minilib modules its top-level imports load (a lazy import inside a function is not an edge)."""
    return {module_name(p): {t for _, t in package_imports(p, packages=("minilib",), top_level_only=True)
                             if t != module_name(p)} for p in paths}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle found by a depth-first walk, as the list of modules around it."""
    found, state, stack = [], {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open":
                found.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def test_the_core_has_no_import_cycle():
    graph = import_graph(p for p in CORE_SOURCES if p != ENTRY)
    assert len(graph) > 50 and not cycles(graph), cycles(graph)


def test_the_cycle_check_can_fail(tmp_path):
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# ----------------------------------------------------------------------------- no import-time registries in the core

def import_time_side_effects(path: Path):
    """Module-level statements that change something outside the module as it is imported: a call statement
    (`store.register(...)`, `REGISTRY.update(...)`), an assignment into another object (`other.X = ...`,
    `TABLE[k] = ...`), or a decorator that is a call or attribute of another module (`@registry.add`)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            yield node.lineno, ast.unparse(node.value)[:60]
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, (ast.Attribute, ast.Subscript)):
                    yield node.lineno, ast.unparse(t)[:60]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in node.decorator_list:
                f = d.func if isinstance(d, ast.Call) else d
                if isinstance(f, ast.Attribute) and ast.unparse(f).split(".")[0] not in IMPORT_NEUTRAL_DECORATORS:
                    yield d.lineno, "@" + ast.unparse(d)[:60]


# decorators that wrap a function and register it nowhere
IMPORT_NEUTRAL_DECORATORS = {"functools", "contextlib", "torch", "numba", "dataclasses", "typing", "abc"}


@pytest.mark.parametrize("path", [p for p in CORE_SOURCES if p != ENTRY], ids=_id)
def test_the_core_registers_nothing_as_it_is_imported(path):
    found = list(import_time_side_effects(path))
    assert not found, f"{module_name(path)} changes state as it is imported (registries belong in the lab): {found}"


def test_the_registry_check_can_fail(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("import functools\nfrom minilab.experiments import store\nTABLE = {}\n"
                   "store.register('x', 'seed')\nTABLE['a'] = 1\n\n\n@functools.cache\ndef f():\n    TABLE['b'] = 2\n\n\n"
                   "@store.command('y')\ndef g():\n    pass\n")
    assert [line for line, _ in import_time_side_effects(src)] == [4, 5, 13]


# ----------------------------------------------------------------------------- the tooling beside the packages

def tooling_imports(path: Path):
    """Imports of the tooling that lives beside the packages (book/, bench/, tools/), which neither reads (the
    command line's `bench` is looked up by name in minilab/cli/__init__.py, never imported)."""
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        yield from ((node.lineno, n) for n in names if n.split(".")[0] in ("book", "bench", "tools", "gpu_check", "check_results"))


@pytest.mark.parametrize("path", SOURCES, ids=_id)
def test_the_packages_never_import_the_book_or_the_tools(path):
    assert not list(tooling_imports(path)), f"{module_name(path)} imports tooling: {list(tooling_imports(path))}"


def test_the_tooling_check_can_fail(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("import json\nfrom book import pages\n")
    assert list(tooling_imports(src)) == [(2, "book")]


# ----------------------------------------------------------------------------- options are parsed in minilab/cli/ only

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


CLI = LAB / "cli"
OUTSIDE_THE_CLI = [p for p in SOURCES if not p.is_relative_to(CLI)]


@pytest.mark.parametrize("path", OUTSIDE_THE_CLI, ids=_id)
def test_only_the_cli_parses_options(path):
    found = [f"line {line}: {what}" for line, what in option_parsing(path)]
    assert not found, f"{module_name(path)} parses options (they belong in minilab/cli/): {found}"


def test_the_option_check_can_fail(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("import json, argparse\nfrom argparse import Namespace\n\n\ndef options(p):\n"
                   "    p.add_argument('--x')\n    p.parse_args([])\n")
    assert list(option_parsing(src)) == [(1, "import argparse"), (2, "from argparse import"), (6, ".add_argument(")]
    assert {p for p in SOURCES} - set(OUTSIDE_THE_CLI) == set(CLI.rglob("*.py")) and len(list(CLI.rglob("*.py"))) >= 4


# ----------------------------------------------------------------------------- fetching reads only the registry

FETCHING = LAB / "fetching.py"
FETCHING_MAY_IMPORT = ("minilib.data.sources", "minilib.files")


def outside_fetching(path: Path):
    """minilib/minilab imports of the fetching module other than the registry (minilib.data.sources) and
    minilib.files: fetching needs no corpus reader, model or experiment."""
    return [(line, target) for line, target in package_imports(path)
            if not any(target == ok or target.startswith(ok + ".") for ok in FETCHING_MAY_IMPORT)]


def test_fetching_imports_nothing_but_the_registry_and_files():
    assert not outside_fetching(FETCHING), f"minilab.fetching imports {outside_fetching(FETCHING)}"


def test_the_fetching_check_can_fail(tmp_path):
    src = tmp_path / "x.py"
    src.write_text("from minilib.files import sha256_file\nfrom minilib.data.sources import SOURCES\n"
                   "from minilib.data import corpora\nimport minilab.experiments.grid\n")
    assert outside_fetching(src) == [(3, "minilib.data.corpora"), (4, "minilab.experiments.grid")]
