# The Pretraining Code — two commands:
#   make lab    set everything up, fetch the data, open the lessons in JupyterLab
#   make test   set everything up, fetch the data, run every test (unit + lessons under nbval)
# Every target is idempotent: a second run only does what is missing.

PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
PY          := $(BIN)/python
# torch is installed before the package so we choose the build: on these machines
# `torch==2.13.0` is a local CPU wheel; a bare `torch` would pull a multi-GB CUDA build.
# Elsewhere, without a GPU: make setup TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_SPEC  ?= torch==2.13.0
TORCH_INDEX ?=
PROFILE     ?=
SMOKE       := MINILIB_PROFILE=smoke
STAMP       := $(VENV)/.installed
# torch threads wait passively: spin-waiting stalls small ops on a busy machine (minilib/__init__.py)
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: setup data lab test test-unit test-lessons widget-test lessons book clean-data help
help:
	@sed -n '2,4p' Makefile

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml
	$(PY) -c "import torch" 2>/dev/null || \
	  $(PY) -m pip install --quiet "$(TORCH_SPEC)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (minilib)" >/dev/null
	touch $(STAMP)

setup: $(STAMP)

data: setup
	$(PY) -m minilib data fetch --all

lab: data
	$(if $(PROFILE),MINILIB_PROFILE=$(PROFILE)) $(BIN)/jupyter lab lessons/

# The browser suite (tests/browser) is its own target, widget-test: it runs every lesson a second time.
test: data
	$(SMOKE) $(BIN)/pytest -q --nbval-lax --nbval-current-env -p no:cacheprovider --ignore=tests/browser tests lessons

test-unit: setup
	$(BIN)/pytest -q --ignore=tests/browser tests

test-lessons: data
	$(SMOKE) $(BIN)/pytest -q --nbval-lax --nbval-current-env lessons

# Live widget tests: each lesson run under smoke in JupyterLab, every widget driven in headless
# Chromium and each plot it shows checked (tests/browser). Debian's chromium, driven by Playwright
# for Python; never Playwright's own browser download.
CHROMIUM    ?= /usr/bin/chromium
widget-test: data
	@test -x $(CHROMIUM) || apt-get install -y chromium || \
	  { echo "chromium is missing: run 'apt-get install -y chromium' as root (Debian)"; exit 2; }
	@$(PY) -c "import playwright" 2>/dev/null || $(PY) -m pip install --quiet playwright
	CHROMIUM=$(CHROMIUM) $(SMOKE) $(BIN)/pytest -q -p no:cacheprovider tests/browser

# Re-execute every lesson in place with the laptop profile (how committed outputs are made).
# The widgets' state (their last picture included) is stored in each notebook, so a widget shows,
# static, before the lesson is run and in the book.
lessons: data
	for nb in lessons/[0-9]*.ipynb; do \
	  MINILIB_PROFILE=$${PROFILE:-laptop} $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=1800 --ExecutePreprocessor.store_widget_state=True "$$nb" || exit 1; done

book: data
	$(PY) -m minilib data datasheet --out book/datasheet.md

clean-data:
	@echo "The data cache is at $${MINILIB_DATA:-~/.cache/minilib}; remove it by hand if you mean to."
