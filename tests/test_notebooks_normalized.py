"""Opening a lesson in JupyterLab does not mark it modified: every lesson is stored as JupyterLab holds it
(tools/normalize_notebooks.py; run it after re-executing a lesson)."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("normalize_notebooks", ROOT / "tools" / "normalize_notebooks.py")
nn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nn)

LESSONS = nn.lessons()


def test_the_lessons_are_found():
    assert len(LESSONS) >= 9 and LESSONS[0].name.startswith("00-")


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_is_normalized(path):
    raw = path.read_text(encoding="utf-8")
    assert raw == nn.dumps(nn.normalize(json.loads(raw))), \
        f"{path.name} is not as JupyterLab holds it (it would open modified): run python tools/normalize_notebooks.py"


def test_normalize_sets_the_kernel_and_jupyterlabs_numbers_and_keeps_every_source_and_output():
    outputs = [{"output_type": "stream", "name": "stdout", "text": ["a\n"]},
               {"output_type": "stream", "name": "stdout", "text": ["b\n"]},          # JupyterLab keeps both
               {"output_type": "display_data", "data": {"text/plain": ["x"]}, "metadata": {}}]
    widget = {"min": 0.0, "max": 2.0, "step": 0.1, "value": 1.5, "n": 3, "small": 1e-05, "flag": True}
    nb = {"cells": [{"cell_type": "code", "id": "c1", "source": ["print(1.0)\n", "print(2)"], "metadata": {},
                     "execution_count": 1, "outputs": outputs},
                    {"cell_type": "markdown", "id": "m1", "source": ["# T"], "metadata": {}}],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                       "language_info": {"name": "python", "version": "3.11.7"},
                       "widgets": {"application/vnd.jupyter.widget-state+json": {"state": {"m": {"state": widget}}}}},
          "nbformat": 4, "nbformat_minor": 5}
    before = json.loads(json.dumps(nb))
    out = nn.normalize(nb)
    assert nb == before                                                     # the argument is not touched
    assert out["cells"] == nb["cells"]                                      # every source and output as it was
    assert out["metadata"]["kernelspec"] == nn.KERNELSPEC
    assert out["metadata"]["language_info"] == nb["metadata"]["language_info"]
    saved = out["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]["m"]["state"]
    assert saved == widget                                                  # the same numbers ...
    assert [type(saved[k]) for k in ("min", "max", "step", "small", "n", "flag")] == [int, int, float, float, int, bool]
    assert '"max": 2,' in nn.dumps(out) and '"step": 0.1,' in nn.dumps(out)  # ... as JavaScript writes them
    assert nn.normalize(out) == out and nn.dumps(nn.normalize(out)) == nn.dumps(out)   # idempotent


def test_the_kernelspec_is_the_one_make_setup_installs():
    makefile = (ROOT / "Makefile").read_text()
    assert f'--name {nn.KERNELSPEC["name"]} --display-name "{nn.KERNELSPEC["display_name"]}"' in makefile


def test_check_names_a_lesson_that_is_not_normalized(tmp_path, capsys):
    nb = json.loads(LESSONS[0].read_text(encoding="utf-8"))
    nb["metadata"]["kernelspec"]["display_name"] = "Python 3"
    path = tmp_path / LESSONS[0].name
    path.write_text(nn.dumps(nb), encoding="utf-8")
    assert nn.main(["--check", str(path)]) == 1 and f"not normalised: {path}" in capsys.readouterr().out
    assert nn.main([str(path)]) == 0 and nn.main(["--check", str(path)]) == 0
