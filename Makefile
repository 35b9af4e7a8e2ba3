# The Pretraining Code — two commands:
#   make lab    set everything up, fetch the data, open the lessons in JupyterLab
#   make test   set everything up, fetch the data, run every test (unit + lessons under nbval)
#   make classroom   `make lab` for teaching: widgets answer from the shipped caches, live training opt-in
#   make test-fast   the inner loop: unit tests without `slow` and `results` (no lessons, no browser), under 3 min on 2 cores
#   make check-results   results/ checked: tools/check_results.py, then the tests marked `results`
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
# JupyterLab refuses to run as root (a container, a lab machine) unless told --allow-root
ALLOW_ROOT  := $(if $(filter 0,$(shell id -u)),--allow-root)
LAB_ARGS    ?=
# The test targets run pytest on every core (pytest-xdist), a worker per core up to 4 (each worker and the lesson
# kernels it starts hold ~1-2 GB), one torch thread each (tests/conftest.py; OMP_NUM_THREADS=1 also reaches
# the kernels nbval starts). --dist loadfile: a file's tests on one worker,
# so a lesson's cells run in order in one kernel and a module's fixtures are built once.
# TEST_JOBS=0 runs pytest in one process, as before.
TEST_JOBS   ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n < 4 ? n : 4 )))
XDIST       := $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile)
ONE_THREAD  := $(if $(XDIST),OMP_NUM_THREADS=1 MKL_NUM_THREADS=1)
# torch threads wait passively: spin-waiting stalls small ops on a busy machine (minilab/__init__.py)
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: setup data lab lab-server test test-fast test-unit test-lessons check-results widget-test lessons book \
        book-test book-page-test screenshots browser datasheet clean-data help
help:
	@sed -n '2,7p' Makefile

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
	@$(MAKE) --no-print-directory trust
	@$(MAKE) --no-print-directory lab-server

# The lessons trusted, so their saved widgets draw before Run All: JupyterLab shows an untrusted notebook's
# widget outputs as `VBox(children=…` text, and a fresh clone is untrusted. Idempotent (a notebook already
# signed stays so); `TRUST_DIR` another folder of lessons (tests/browser/test_fresh_clone.py trusts a copy).
TRUST_DIR   ?= lessons
.PHONY: trust
trust:
	$(BIN)/jupyter trust $(TRUST_DIR)/[0-9]*.ipynb >/dev/null

# The server alone, as `make lab` starts it (tests/test_book_lab.py starts it this way and waits for it to answer).
lab-server:
	$(if $(PROFILE),MINILIB_PROFILE=$(PROFILE)) $(BIN)/jupyter lab $(ALLOW_ROOT) $(LAB_ARGS) lessons/

# Classroom mode: the lessons as `make lab` opens them, with MINILIB_CLASSROOM=1 (minilib/runtime.py):
# every widget answers from the shipped caches at once, and live training ("train this point") is
# opt-in, per widget. The teacher's guide, a 50-minute plan per lesson, is a part of the book
# (`make book`: book/_build/html/teachers-guide/index.html).
.PHONY: classroom classroom-server
classroom: data
	@$(MAKE) --no-print-directory trust
	@$(MAKE) --no-print-directory classroom-server

# The classroom server alone, as `make classroom` starts it (tests/test_book_lab.py starts it this way).
classroom-server:
	MINILIB_CLASSROOM=1 $(if $(PROFILE),MINILIB_PROFILE=$(PROFILE)) $(BIN)/jupyter lab $(ALLOW_ROOT) $(LAB_ARGS) lessons/

# The lessons' saved outputs checked against the results and checkpoints they read (tools/check_results.py),
# unit tests, every lesson under nbval, then the HTML book built and its pages checked in chromium.
# The live widget suite (tests/browser/test_widgets_live.py) stays in widget-test / book-test: it runs
# every lesson a second time in JupyterLab, too long for CI on top of this. --durations lists the
# slowest tests, so a CI run that nears its 40-minute budget says where the time went.
test: data browser book
	$(PY) tools/check_results.py
	$(SMOKE) $(ONE_THREAD) $(BIN)/pytest -q $(XDIST) --durations=25 --nbval-lax --nbval-current-env -p no:cacheprovider --ignore=tests/browser -m "not browser" tests lessons
	CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q -s -p no:cacheprovider -m browser tests/browser/test_book_pages.py

# Test tiers (markers in pyproject.toml). Every unit test runs at the smoke profile whatever the shell says
# (tests/conftest.py); a test that means another profile sets it itself.
#   test-fast      the inner loop: tests/ without `slow` (re-measures a shipped checkpoint, or runs end to end > ~5 s) and
#                  `results` (golden numbers and grid completeness read from results/); no lessons, no browser
#   test-unit      every unit test, those two markers included
#   check-results  results/ checked: tools/check_results.py, then the tests marked `results`
test-fast: data
	$(ONE_THREAD) $(BIN)/pytest -q $(XDIST) --durations=10 -p no:cacheprovider --ignore=tests/browser -m "not slow and not results" tests

test-unit: setup
	$(ONE_THREAD) $(BIN)/pytest -q $(XDIST) --ignore=tests/browser -m "not browser" tests

check-results: setup
	$(BIN)/python tools/check_results.py
	$(ONE_THREAD) $(BIN)/pytest -q $(XDIST) -p no:cacheprovider --ignore=tests/browser -m results tests

test-lessons: data
	$(SMOKE) $(ONE_THREAD) $(BIN)/pytest -q $(XDIST) --nbval-lax --nbval-current-env -m "" lessons

# Live widget tests: each lesson run under smoke in JupyterLab, every widget driven in headless
# Chromium and each plot it shows checked (tests/browser). Debian's chromium, driven by Playwright
# for Python; never Playwright's own browser download.
CHROMIUM    ?= /usr/bin/chromium
widget-test: data
	@test -x $(CHROMIUM) || apt-get install -y chromium || \
	  { echo "chromium is missing: run 'apt-get install -y chromium' as root (Debian)"; exit 2; }
	@$(PY) -c "import playwright" 2>/dev/null || $(PY) -m pip install --quiet playwright
	CHROMIUM=$(CHROMIUM) $(SMOKE) $(BIN)/pytest -q -p no:cacheprovider -m browser tests/browser

# Re-execute every lesson in place with the laptop profile (how committed outputs are made).
# The widgets' state (their last picture included) is stored in each notebook, so a widget shows,
# static, before the lesson is run and in the book. tools/normalize_notebooks.py then stores each as JupyterLab
# holds it, so opening a lesson does not mark it modified (tests/test_notebooks_normalized.py checks).
lessons: data
	for nb in lessons/[0-9]*.ipynb; do \
	  MINILIB_PROFILE=$${PROFILE:-laptop} $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=1800 --ExecutePreprocessor.store_widget_state=True "$$nb" || exit 1; \
	  $(PY) tools/normalize_notebooks.py "$$nb" || exit 1; done

# The HTML book in book/_build/html/ (open index.html): the lessons as committed, never re-executed.
# Offline once the three npm packages it serves (MathJax, RequireJS, the widget manager) are cached.
book: setup
	$(PY) book/build.py

# Debian's chromium and Playwright for Python, or one line and exit 2 (never Playwright's own browser download).
browser: setup
	@test -x $(CHROMIUM) || apt-get install -y -qq chromium >/dev/null 2>&1 || \
	  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } || \
	  { echo "chromium is missing and could not be installed: run 'apt-get install -y chromium' as root (Debian)"; exit 2; }
	@$(PY) -c "import playwright" 2>/dev/null || $(PY) -m pip install --quiet playwright || \
	  { echo "playwright for Python is missing: run '$(PY) -m pip install playwright'"; exit 2; }

# Every page of the book in headless chromium: no console error, no request to another host, images
# decoded, internal links resolve, math typeset, static widgets drawn; writes two screenshots.
book-page-test: book browser
	CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q -s -p no:cacheprovider -m browser tests/browser/test_book_pages.py

# The page tests, then the live widget suite.
book-test: book-page-test widget-test

# PNG screenshots in book/_build/screenshots/: two book pages, and chapter 04's widget after a live point.
screenshots: book browser data
	CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q -p no:cacheprovider -m browser tests/browser/test_book_pages.py -k screenshots
	CHROMIUM=$(CHROMIUM) $(SMOKE) $(BIN)/pytest -q -p no:cacheprovider -m browser tests/browser/test_widgets_live.py \
	  -k "sample_efficiency_explorer and 04"

# Regenerate book/datasheet.md from the cached corpora (needs the data).
datasheet: data
	$(PY) -m minilib data datasheet --out book/datasheet.md

clean-data:
	@echo "The data cache is at $${MINILIB_DATA:-~/.cache/minilib}; remove it by hand if you mean to."

# The GPU path in one prepared call (tools/gpu_check.py): every lesson's `full` training code for a bounded number
# of steps on CUDA, the DDP path with one rank, then `bench gpt --shape gpt2-small` eager and compiled; ≤ 9 min on
# one H100; writes results/gpu-check-<device>.json (and a copy into $(OUT) when set, as a device call's $OUT is).
# A machine without network needs the data packed first, here: `$(PY) tools/gpu_check.py pack` (then carry .gpu-check).
# gpu-check-dry: the same script on the CPU at tiny sizes (tests/test_gpu_check.py runs it under `make test`).
GPU_PY      ?= $(if $(wildcard $(PY)),$(PY),python3)
.PHONY: gpu-check gpu-check-dry
gpu-check:
	$(GPU_PY) tools/gpu_check.py $(if $(OUT),--copy-to $(OUT))

gpu-check-dry: data
	OMP_NUM_THREADS=1 $(PY) tools/gpu_check.py --dry
