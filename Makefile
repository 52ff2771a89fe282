# posattn: `make demo` and `make test` are the two commands that do everything on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV  ?= .venv
BIN   := $(VENV)/bin
# The stamp is keyed on pyproject.toml's content (nbdev-export rewrites the file without changing it).
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
PROFILE ?= cpu

.PHONY: setup demo test export readme check-sync

setup: $(STAMP)

# Create .venv when it is missing, reuse it when it exists; reinstall the project when pyproject.toml changes.
$(STAMP):
	@test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.14.1 torchvision==0.29.1 2>&1 | { grep -v '^WARNING: Location' || true; }
	$(BIN)/pip install --quiet -e ".[dev]" 2>&1 | { grep -v '^WARNING: Location' || true; }
	@rm -f $(VENV)/.installed-*; touch $@

demo: $(STAMP)
	@mkdir -p results/demo
	$(BIN)/papermill --cwd nbs nbs/07_block.ipynb results/demo/07_block.ipynb
	@echo "demo: figures in figures/, executed notebook in results/demo/"

# Fails when nbdev-export would change posattn/ or nbdev-clean would change a notebook, then tests every notebook.
test: $(STAMP) check-sync
	$(BIN)/nbdev-test --n-workers 2 --timing

check-sync: $(STAMP)
	@tmp=$$(mktemp -d); cp -r posattn nbs "$$tmp"/; \
	$(BIN)/nbdev-export; \
	if ! diff -r -q -x __pycache__ "$$tmp"/posattn posattn; then \
	  echo "posattn/ is not what the notebooks export: run nbdev-export and commit the result"; exit 1; fi; \
	$(BIN)/nbdev-clean; \
	if ! diff -r -q -x .ipynb_checkpoints "$$tmp"/nbs nbs; then \
	  echo "nbdev-clean changed the notebooks above: run nbdev-clean and commit the result"; exit 1; fi; \
	cp README.md "$$tmp"/README.md; $(MAKE) --no-print-directory readme; \
	if ! diff -q "$$tmp"/README.md README.md; then \
	  echo "README.md is not what nbs/index.ipynb generates: run make readme and commit the result"; exit 1; fi; \
	rm -rf "$$tmp"; echo "posattn/, nbs/ and README.md are in sync and clean"

# After editing notebooks: regenerate the package and README, and clean the notebooks.
export: $(STAMP)
	$(BIN)/nbdev-export && $(BIN)/nbdev-clean && $(MAKE) --no-print-directory readme

readme: $(STAMP)
	$(BIN)/jupyter nbconvert --log-level WARN --to markdown nbs/index.ipynb --output-dir . --output README
