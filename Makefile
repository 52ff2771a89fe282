# posattn: `make demo` and `make test` are the two commands that do everything on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV  ?= .venv
BIN   := $(VENV)/bin
# The PyTorch this project is built and tested with: the one place its version is written (environment.yml is checked
# against it by nbs/99_api.ipynb).
TORCH ?= 2.14.1
TORCHVISION ?= 0.29.1
# The stamp is keyed on pyproject.toml's content (nbdev-export rewrites the file without changing it).
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
PROFILE ?= cpu
JOBS ?= 2
# extra sweep options, e.g. SWEEP_ARGS="--treatments span_2d siren_2d --seeds 9188 2755 -p data_root=PATH"
SWEEP_ARGS ?=
# where `make reproduce` runs the grid: local (JOBS at a time on this machine) or slurm (one job array, SLURM_ARGS),
# e.g. EXECUTOR=slurm SLURM_ARGS="--partition gpu --gpus-per-run 1 --cpus-per-run 4 --time 48:00:00"
EXECUTOR ?= local
SLURM_ARGS ?=
OFFLINE_CIFAR_TAR ?= ../shared/data/cifar10-jpeg-train.tar.gz
# The notebooks `make lab-check` opens and runs in a real browser (paths under nbs/).
LAB_NOTEBOOKS ?= index.ipynb 23_layers.block.ipynb
LAB_PORT ?= 8888

# The documentation site: every notebook executed (long cells skipped, and marked), with the API reference.
DOCS_JOBS ?= 2

.PHONY: setup demo test install-check export readme check-sync docs docs-check reproduce tables study open-questions vit grid study-3d today today-runs bench gpu-check lab browser lab-check slurm-up slurm-down test-slurm

setup: $(STAMP)

# Create .venv when it is missing, reuse it when it exists; reinstall the project when pyproject.toml changes.
$(STAMP):
	@test -x $(BIN)/python || { echo "setup: creating $(VENV)"; python3 -m venv $(VENV); }
	@echo "setup: installing PyTorch $(TORCH) and torchvision $(TORCHVISION) (1-3 minutes on a fresh machine)"
	@$(BIN)/pip install --progress-bar off torch==$(TORCH) torchvision==$(TORCHVISION) 2>&1 | \
	  { grep -E '^(Collecting|Installing|Successfully|ERROR)' || true; }
	@echo "setup: installing posattn with its experiment, lab, dev, docs and timm extras"
	@$(BIN)/pip install --progress-bar off -e ".[experiments,lab,dev,docs,timm]" 2>&1 | \
	  { grep -E '^(Installing|Successfully|ERROR)' || true; }
	@# The venv's kernel spec is displayed as `python3`: nbdev-clean writes display_name = name into every notebook,
	@# and JupyterLab writes the kernel spec's display name, so the two agree and notebooks open unmodified.
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name python3
	@# ... and launched by posattn's provisioner, which gives it CurveZMQ keys whatever the client (papermill reads no
	@# Jupyter config); see nbs/98_jupyter.ipynb.
	$(BIN)/python -c "import json, sys; p = sys.prefix + '/share/jupyter/kernels/python3/kernel.json'; k = json.load(open(p)); \
	  k.setdefault('metadata', {})['kernel_provisioner'] = {'provisioner_name': 'posattn-curve'}; json.dump(k, open(p, 'w'), indent=1)"
	@# Jupyter applications (JupyterLab, nbconvert) start kernels with CurveZMQ keys instead of plain-text TCP.
	@mkdir -p $(VENV)/etc/jupyter && echo '{"KernelManager": {"transport_encryption": "auto"}}' \
	  > $(VENV)/etc/jupyter/jupyter_config.json
	@# JupyterLab opens without asking to fetch news or check for updates (a reader's first screen is the notebook).
	@mkdir -p $(VENV)/share/jupyter/lab/settings && $(BIN)/python -c "import json, sys; json.dump({'@jupyterlab/apputils-extension:notification': \
	  {'fetchNews': 'false', 'checkForUpdates': False}}, open(sys.prefix + '/share/jupyter/lab/settings/overrides.json', 'w'))"
	@rm -f $(VENV)/.installed-*; touch $@

# The main job on the embedded default data: the span_2d_threshold treatment on scikit-learn's digits (8x8), through
# papermill, exactly as a researcher would run any treatment.
demo: $(STAMP)
	@mkdir -p results/demo
	$(BIN)/papermill nbs/run_experiment.ipynb results/demo/run_experiment.ipynb -p treatment span_2d_threshold -p profile demo -p force True
	@echo "demo: result results/demo/span_2d_threshold/seed-9188.json, figures figures/demo/runs/, executed notebook results/demo/run_experiment.ipynb"

# Fails when nbdev-export would change posattn/ or nbdev-clean would change a notebook, then tests every notebook.
test: $(STAMP) check-sync
	$(BIN)/nbdev-test --n-workers 2 --timing

# What `pip install posattn` gives the layer alone: the wheel in a fresh venv with PyTorch only runs README.md's
# "Use it in your model" snippet, and the experiment platform names its extra (scripts/install_check.py; 1-3 minutes).
install-check: $(STAMP)
	$(BIN)/python scripts/install_check.py --torch $(TORCH)

# Fails when posattn/ is not what the notebooks export, a notebook is not clean, a README page is not what its notebook
# makes, a benchmark page is not what its JSON makes (scripts/bench_pages.py --check) or a table not what its runs make.
check-sync: $(STAMP)
	@if ! $(BIN)/ruff format --check --quiet nbs; then \
	  echo "ruff format would change the notebooks above: run ruff format nbs, then nbdev-export, and commit"; exit 1; fi
	@tmp=$$(mktemp -d); cp -r posattn nbs "$$tmp"/; \
	$(BIN)/nbdev-export; \
	if ! diff -r -q -x __pycache__ "$$tmp"/posattn posattn; then \
	  echo "posattn/ is not what the notebooks export: run nbdev-export and commit the result"; exit 1; fi; \
	$(BIN)/nbdev-clean; \
	if ! diff -r -q -x .ipynb_checkpoints "$$tmp"/nbs nbs; then \
	  echo "nbdev-clean changed the notebooks above: run nbdev-clean and commit the result"; exit 1; fi; \
	for f in README.md results/README.md results/bench/README.md; do mkdir -p "$$tmp"/$$(dirname $$f); cp $$f "$$tmp"/$$f; done; \
	$(MAKE) --no-print-directory readme; \
	for f in README.md results/README.md results/bench/README.md; do if ! diff -q "$$tmp"/$$f $$f; then \
	  echo "$$f is not what nbs/ generates (index, results, benchmarks): run make readme and commit the result"; exit 1; fi; done; \
	rm -rf "$$tmp"; $(BIN)/python scripts/bench_pages.py --check; $(BIN)/python scripts/tables.py --check; \
	echo "posattn/, nbs/, the README pages, the benchmark pages and the tables are in sync and clean"

# After editing notebooks: format their code, regenerate the package and README, and clean the notebooks.
export: $(STAMP)
	$(BIN)/ruff format --quiet nbs && $(BIN)/nbdev-export && $(BIN)/nbdev-clean && $(MAKE) --no-print-directory readme

# README.md is nbs/index.ipynb executed, with the input of `remove_input` cells hidden; the pages it links to are
# nbs/results.ipynb (results/README.md) and nbs/benchmarks.ipynb (results/bench/README.md), their tables read from
# results/. Links and images in the notebooks are relative to nbs/ (`../figures/x.png`, as JupyterLab resolves them):
# README.md at the root drops their leading `../`, results/README.md (as deep as nbs/) keeps it, and
# results/bench/README.md makes it `../../`.
readme: $(STAMP)
	$(BIN)/jupyter nbconvert --log-level WARN --execute --to markdown \
	  --TagRemovePreprocessor.remove_input_tags='["remove_input"]' nbs/index.ipynb --output-dir . --output README
	@sed -i -E 's#(\]\(|src=")\.\./#\1#g' README.md
	$(BIN)/jupyter nbconvert --log-level WARN --execute --to markdown \
	  --TagRemovePreprocessor.remove_input_tags='["remove_input"]' nbs/results.ipynb --output-dir results --output README
	$(BIN)/jupyter nbconvert --log-level WARN --execute --to markdown \
	  --TagRemovePreprocessor.remove_input_tags='["remove_input"]' nbs/benchmarks.ipynb --output-dir results/bench --output README
	@sed -i -E 's#(\]\(|src=")\.\./#\1../../#g' results/bench/README.md

# `make reproduce PROFILE=cpu [JOBS=2] [SWEEP_ARGS=...] [EXECUTOR=slurm SLURM_ARGS=...]`: run the profile's missing
# treatment x RandomState runs through the sweep (on this machine, or as one SLURM job array that the sweep watches to
# its end), then rebuild Tables 5-7 and Figures 5-7 with nbs/reproduce.ipynb. For the cpu and study profiles the offline
# CIFAR-10 copy is extracted into data/ first when it is there and not yet extracted. Failed runs are listed with their logs;
# the tables are still made from the finished runs, and make then exits with the sweep's status.
reproduce: $(STAMP)
	@if { [ "$(PROFILE)" = cpu ] || [ "$(PROFILE)" = study ]; } && [ ! -d data/cifar10-jpeg/train ] && [ -f "$(OFFLINE_CIFAR_TAR)" ]; then \
	  echo "extracting $(OFFLINE_CIFAR_TAR) into data/"; mkdir -p data; tar xzf "$(OFFLINE_CIFAR_TAR)" -C data; fi
	@mkdir -p results/$(PROFILE)
	@status=0; $(BIN)/python -m posattn.sweep --profile $(PROFILE) --executor $(EXECUTOR) \
	  $(if $(filter slurm,$(EXECUTOR)),--wait $(SLURM_ARGS),--jobs $(JOBS)) $(SWEEP_ARGS) || status=$$?; \
	$(BIN)/papermill --cwd nbs nbs/reproduce.ipynb results/$(PROFILE)/reproduce.ipynb -p profile $(PROFILE); \
	echo "reproduce: tables in results/$(PROFILE)/tables/, figures in figures/$(PROFILE)/"; exit $$status

# `make tables`: every committed table and figure rebuilt from the committed runs, nothing trained (Tables 5-7 of cpu,
# study and probe, then the study's tables): what `make reproduce` and `make study` end with. check-sync rebuilds them in
# a copy and fails when a committed one is not what the runs make.
tables: $(STAMP)
	$(BIN)/python scripts/tables.py

# `make study [JOBS=2]`: the CPU study (nbs/study.ipynb). Through the sweep, each keeping what is finished: the study
# profile (CIFAR-10 8x8, the paper's seven treatments x nine RandomStates), the pilot of image side (siren_1d and
# siren_2d at 8x8, 12x12 and 16x16 with 2,000 training and 1,000 validation images, the paper's five RandomStates), the
# other encodings in 2-D with their no-position control (ENCODINGS_2D) at the study scale (the paper's five), and the
# probe: siren_1d, siren_2d and ENCODINGS_2D at nine RandomStates each, the paper's other five treatments at its five.
# Then Tables 5-7 of the study profile and of the probe (nbs/reproduce.ipynb) and the study notebook: tables in
# results/{study,probe}/tables/, figures in figures/{study,probe}/, fast timed at the learned windows in
# results/bench/learned_spans.json. About 18 CPU-hours from nothing (the committed runs: 17.5), two thirds the probe.
PAPER_SEEDS ?= 9188 2755 361 1321 833 # the paper's five RandomStates: the pilot and the other encodings
PILOT_SIDES ?= 8 12 16
ENCODINGS_2D ?= sinusoidal_2d learned_2d shaw_2d rel_bias_2d multiplicative_2d deberta_2d rope_2d alibi_2d spe_conv_2d gam_2d
study: $(STAMP)
	@if [ ! -d data/cifar10-jpeg/train ] && [ -f "$(OFFLINE_CIFAR_TAR)" ]; then \
	  echo "extracting $(OFFLINE_CIFAR_TAR) into data/"; mkdir -p data; tar xzf "$(OFFLINE_CIFAR_TAR)" -C data; fi
	$(BIN)/python -m posattn.sweep --profile study --jobs $(JOBS)
	for side in $(PILOT_SIDES); do $(BIN)/python -m posattn.sweep --profile study --treatments siren_1d siren_2d \
	  --seeds $(PAPER_SEEDS) -p resolution=$$side -p train_size=2000 -p val_size=1000 \
	  --results-dir results/pilot/side$$side --jobs $(JOBS) || exit 1; done
	$(BIN)/python -m posattn.sweep --profile study --treatments none_2d $(ENCODINGS_2D) --seeds $(PAPER_SEEDS) --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments siren_1d siren_2d --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments baseline span_1d span_1d_threshold span_2d span_2d_threshold \
	  --seeds $(PAPER_SEEDS) --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments $(ENCODINGS_2D) --jobs $(JOBS)
	$(BIN)/papermill --cwd nbs nbs/reproduce.ipynb results/study/reproduce.ipynb -p profile study
	$(BIN)/papermill --cwd nbs nbs/reproduce.ipynb results/probe/reproduce.ipynb -p profile probe
	$(BIN)/papermill --cwd nbs nbs/study.ipynb results/study/study.ipynb
	@echo "study: tables in results/study/tables/ and results/probe/tables/, figures in figures/study/ and figures/probe/"

# `make open-questions [JOBS=2]`: the paper's open questions (nbs/study_open_questions.ipynb), through the sweep, each
# keeping what is finished: on the probe (nine RandomStates) SIREN's biases at uniform phases, its sines replaced by
# ReLUs, a continuous bias, no positions, the rotated span (and the diagonal span at the four RandomStates beyond the paper's five),
# siren_2d and six other encodings at a learning rate of 3e-4, siren_2d again by today's fast and by Version 1 (at 1e-3
# and 3e-4: the same draws, other arithmetic), SIREN's network with ReLUs for 12 epochs, and siren_2d with its
# initial weights and its data from different RandomStates (a step of the notebook); the omega_0 grid
# fixed and learned, on the probe and on CIFAR-10 (study profile, the paper's five RandomStates); the spans' runs'
# accuracy per probe relation (a step of the notebook). Then the notebook: those two steps, tables in results/open/, figures in
# figures/open/. About 12 CPU-hours from nothing.
W0_FIXED ?= siren_2d_w0_0.1 siren_2d_w0_1 siren_2d_w0_3 siren_2d_w0_30 siren_2d_w0_100
W0_LEARNED ?= siren_2d_learnw0_w0_0.1 siren_2d_learnw0_w0_1 siren_2d_learnw0_w0_3 siren_2d_learnw0_w0_30 siren_2d_learnw0_w0_100
open-questions: $(STAMP)
	@if [ ! -d data/cifar10-jpeg/train ] && [ -f "$(OFFLINE_CIFAR_TAR)" ]; then \
	  echo "extracting $(OFFLINE_CIFAR_TAR) into data/"; mkdir -p data; tar xzf "$(OFFLINE_CIFAR_TAR)" -C data; fi
	$(BIN)/python -m posattn.sweep --profile probe --treatments siren_2d_phase relu_2d relu_he_2d mlp_bias_2d none_2d --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments span_2d_cov span_2d_cov_threshold --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments span_2d span_2d_threshold --seeds 1 2 3 4 --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments siren_2d rel_bias_2d relu_2d mlp_bias_2d learned_2d rope_2d \
	  deberta_2d -p lr=0.0003 --results-dir results/open/lr3e-4 --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments siren_2d --results-dir results/open/now --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments siren_2d -p version=v1 --results-dir results/open/v1 --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments siren_2d -p version=v1 -p lr=0.0003 \
	  --results-dir results/open/v1_lr3e-4 --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments relu_he_2d --seeds 1 9188 -p epochs=12 \
	  --results-dir results/open/epochs12 --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments $(W0_FIXED) $(W0_LEARNED) --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile study --treatments $(W0_FIXED) siren_2d_learnw0 $(W0_LEARNED) \
	  --seeds $(PAPER_SEEDS) --jobs $(JOBS)
	$(BIN)/papermill --cwd nbs nbs/study_open_questions.ipynb results/open/study_open_questions.ipynb
	@echo "open questions: tables in results/open/, figures in figures/open/"

# `make span-cost`: a span that learns to save compute (nbs/study_span_cost.ipynb). Through the sweep, resumable (finished
# runs skipped, checkpoints kept beside them): span_2d_threshold on the span16 profile (CIFAR-10 at 16x16, 3 epochs) at
# each span_cost of SPAN_COSTS and RandomStates SPAN_COST_SEEDS, whole RandomStates first, one run at a time; results in
# results/span_cost/cost-<value>/, and each (span_cost, span_lr) of SPAN_LR_ARMS (the span at a learning rate of its
# own) in results/span_cost/cost-<value>-span-lr-<rate>/. Then the notebook: every finished run timed under fast at its
# learned windows against the same model over the full span (stored beside it as timing-seed-<seed>.json, never
# measured twice; about 3 minutes a run on a busy 2-core machine), tables in results/span_cost/tables/, figures in figures/span_cost/; then the README
# pages. `make tables` rebuilds the tables and figures from the stored timings, training and timing nothing.
SPAN_COSTS ?= $(shell $(BIN)/python -c "from posattn.experiment.runs import SPAN_COSTS as c; print(*(f'{x:g}' for x in c))")
SPAN_COST_SEEDS ?= $(shell $(BIN)/python -c "from posattn.experiment.runs import SPAN_COST_SEEDS as s; print(*s)")
SPAN_LR_ARMS ?= $(shell $(BIN)/python -c "from posattn.experiment.runs import SPAN_LR_ARMS as a; print(*(f'{c:g}:{r:g}' for c, r in a))")
.PHONY: span-cost
span-cost: $(STAMP)
	@if [ ! -d data/cifar10-jpeg/train ] && [ -f "$(OFFLINE_CIFAR_TAR)" ]; then \
	  echo "extracting $(OFFLINE_CIFAR_TAR) into data/"; mkdir -p data; tar xzf "$(OFFLINE_CIFAR_TAR)" -C data; fi
	for seed in $(SPAN_COST_SEEDS); do for cost in $(SPAN_COSTS); do \
	  $(BIN)/python -m posattn.sweep --profile span16 --treatments span_2d_threshold --seeds $$seed -p span_cost=$$cost \
	    --results-dir results/span_cost/cost-$$cost --jobs 1 || exit 1; done; \
	  for arm in $(SPAN_LR_ARMS); do cost=$${arm%%:*}; rate=$${arm#*:}; \
	  $(BIN)/python -m posattn.sweep --profile span16 --treatments span_2d_threshold --seeds $$seed -p span_cost=$$cost \
	    -p span_lr=$$rate --results-dir results/span_cost/cost-$$cost-span-lr-$$rate --jobs 1 || exit 1; done; done
	@mkdir -p results/span_cost/notebooks
	$(BIN)/papermill --cwd nbs nbs/study_span_cost.ipynb results/span_cost/notebooks/study_span_cost.ipynb
	$(MAKE) --no-print-directory readme
	@echo "span-cost: tables in results/span_cost/tables/, figures in figures/span_cost/, the section in results/README.md"

# `make vit [JOBS=2]`: a timm Vision Transformer on the offline CIFAR-10 copy (nbs/study_vit.ipynb): timm's absolute
# positions, no positions, and its attention converted to 2-D SIREN without and with the span, the paper's five
# RandomStates each (the vit profile: 32x32 images in 4x4 patches, 4,000 images, 4 epochs), through the sweep; then the
# notebook: tables in results/vit/tables/, figure figures/vit/vit_positions.png. About 1.5 CPU-hours from nothing.
VIT_TREATMENTS ?= vit_abs_2d vit_none_2d vit_siren_2d vit_span_2d
vit: $(STAMP)
	@if [ ! -d data/cifar10-jpeg/train ] && [ -f "$(OFFLINE_CIFAR_TAR)" ]; then \
	  echo "extracting $(OFFLINE_CIFAR_TAR) into data/"; mkdir -p data; tar xzf "$(OFFLINE_CIFAR_TAR)" -C data; fi
	$(BIN)/python -m posattn.sweep --profile vit --treatments $(VIT_TREATMENTS) --jobs $(JOBS)
	$(BIN)/papermill --cwd nbs nbs/study_vit.ipynb results/vit/study_vit.ipynb
	@echo "vit: tables in results/vit/tables/, figure figures/vit/vit_positions.png"

# `make grid [JOBS=2]`: one model at every grid (nbs/study_grid.ipynb). Through the sweep, checkpoints kept under
# results/grid/: the ViT of `make vit` with timm's absolute embedding, SIREN, the span, the relative-bias table and RoPE
# (the paper's five RandomStates), and the probe at 3e-4 with SIREN, the bias table, RoPE and no positions (nine), each with
# today's learned rotations (RoPE-Mixed, LieRE, ComRoPE) beside them. Then
# every run is evaluated at other sizes and aspects, SIREN and the span under both coordinate choices
# (posattn.experiment.evaluate, answers stored beside each run): tables in results/grid/tables/, figure
# figures/grid/grid_sizes.png. About 6 CPU-hours on this machine's CPUs, resumable.
GRID_VIT ?= vit_abs_2d vit_siren_2d vit_span_2d vit_rel_bias_2d vit_rope_2d vit_rope_mixed_2d vit_liere_2d vit_comrope_2d
GRID_PROBE ?= siren_2d rel_bias_2d rope_2d none_2d rope_mixed_2d liere_2d comrope_2d
grid: $(STAMP)
	@if [ ! -d data/cifar10-jpeg/train ] && [ -f "$(OFFLINE_CIFAR_TAR)" ]; then \
	  echo "extracting $(OFFLINE_CIFAR_TAR) into data/"; mkdir -p data; tar xzf "$(OFFLINE_CIFAR_TAR)" -C data; fi
	$(BIN)/python -m posattn.sweep --profile vit --treatments $(GRID_VIT) --results-dir results/grid --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments $(GRID_PROBE) -p lr=0.0003 --results-dir results/grid --jobs $(JOBS)
	$(BIN)/papermill --cwd nbs nbs/study_grid.ipynb results/grid/study_grid.ipynb
	@echo "grid: tables in results/grid/tables/, figure figures/grid/grid_sizes.png"

# `make study-3d [JOBS=2]`: the n-D claim on 3-D data (nbs/study_3d.ipynb): the 3-D probe (4x4x4 volumes) and moving
# digits (4x4x4 clips), each with SIREN and the span over 3-D offsets, the other encodings in 3-D, no positions, and
# siren_2d and siren_1d on the frames side by side and flattened, nine RandomStates at 3e-4; the SIREN treatments
# again at the paper's 1e-3 (results/lr1e-3/). Then the notebook: tables in results/study_3d/, figures in
# figures/study_3d/. The whole grid is about 19 CPU-hours from nothing; the committed runs are the 12 the study was
# given (DECISIONS.md), and the sweep skips every finished run.
TREATMENTS_3D ?= siren_3d siren_2d siren_1d none_3d span_3d span_3d_threshold rel_bias_3d rope_3d learned_3d
SIREN_3D ?= siren_3d span_3d span_3d_threshold siren_2d siren_1d
study-3d: $(STAMP)
	for p in probe3d clips; do $(BIN)/python -m posattn.sweep --profile $$p --treatments $(TREATMENTS_3D) --jobs $(JOBS) || exit 1; done
	for p in probe3d clips; do $(BIN)/python -m posattn.sweep --profile $$p --treatments $(SIREN_3D) -p lr=0.001 \
	  --results-dir results/lr1e-3 --jobs $(JOBS) || exit 1; done
	$(BIN)/papermill --cwd nbs nbs/study_3d.ipynb results/study_3d/study_3d.ipynb
	@echo "study-3d: tables in results/study_3d/, figures in figures/study_3d/"

# `make today`: the paper's encoding against today's (nbs/study_today.ipynb), from whatever runs have finished, nothing
# trained: the grid study evaluates the finished runs it has not evaluated yet (one process, answers stored beside each
# run, never repeated; one ViT run at its eight sizes took 1.6 CPU-minutes, 5.4 minutes of wall time beside two training
# runs), then the comparison's tables in results/today/, its figure figures/today/accuracy_by_size.png, and the README
# pages.
# `make today-runs [JOBS=2]` first trains what is missing of its runs through the sweep (resumable): the ViT and the 2-D
# probe arms with `make grid`'s settings, and RoPE-Mixed, LieRE and ComRoPE on the 3-D probe (nine RandomStates at 3e-4).
TODAY_3D ?= rope_mixed_3d liere_3d comrope_3d
today: $(STAMP)
	$(BIN)/papermill --cwd nbs nbs/study_grid.ipynb results/grid/study_grid.ipynb
	@mkdir -p results/today/notebooks
	$(BIN)/papermill --cwd nbs nbs/study_today.ipynb results/today/notebooks/study_today.ipynb
	$(MAKE) --no-print-directory readme
	@echo "today: tables in results/today/, figure figures/today/accuracy_by_size.png, the section in results/README.md"

today-runs: $(STAMP)
	@if [ ! -d data/cifar10-jpeg/train ] && [ -f "$(OFFLINE_CIFAR_TAR)" ]; then \
	  echo "extracting $(OFFLINE_CIFAR_TAR) into data/"; mkdir -p data; tar xzf "$(OFFLINE_CIFAR_TAR)" -C data; fi
	$(BIN)/python -m posattn.sweep --profile vit --treatments $(filter vit_rope_mixed_2d vit_liere_2d vit_comrope_2d,$(GRID_VIT)) \
	  --results-dir results/grid --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe --treatments $(filter rope_mixed_2d liere_2d comrope_2d,$(GRID_PROBE)) \
	  -p lr=0.0003 --results-dir results/grid --jobs $(JOBS)
	$(BIN)/python -m posattn.sweep --profile probe3d --treatments $(TODAY_3D) --jobs $(JOBS)
	$(MAKE) --no-print-directory today

# Appendix A.4 and the fast version's benchmark: one layer's forward+backward time and peak memory, each case in a fresh
# process; writes results/bench/*.json and figures/*_time_memory.png. Then the training benchmark: one training step of
# the whole classifier per treatment, input size and thread count against the fused-attention floor, and a profile;
# writes results/bench/train.{json,md} and figures/train_throughput.png. Then converted timm ViTs against timm's own (issue 48):
# results/bench/vit.{json,md} and figures/vit_step.png (about 40 minutes). Finished cases are kept: delete a JSON to re-measure.
# `make gpu-check`: the device check (scripts/gpu_check.py, the command line of posattn.bench.device). On a machine with a GPU: the quick pass (about a minute and a half),
# then WARM processes that compile the fused versions' kernels into Triton's and Inductor's on-disk caches (at most 2
# minutes), then the full check (about 5 minutes), writing results/bench/gpu.json and gpu.md. Without one: the CPU pass at small
# sizes (what CI runs), written to results/bench/gpu-cpu.json, which is not versioned. GPU machines without this venv
# run it with their own Python: `make gpu-check PYTHON=python3` (it installs nothing; the offline CIFAR-10 copy for its
# short real run is read from data/cifar10-jpeg-train.tar.gz, copied there from OFFLINE_CIFAR_TAR when it is missing).
PYTHON ?= $(BIN)/python
WARM ?= 8 # processes that compile the fused kernels side by side before the full check times them (caches on disk)
gpu-check: $(if $(filter $(BIN)/python,$(PYTHON)),$(STAMP))
	@if [ ! -f data/cifar10-jpeg-train.tar.gz ] && [ -f "$(OFFLINE_CIFAR_TAR)" ]; then mkdir -p data; cp "$(OFFLINE_CIFAR_TAR)" data/; fi
	@if $(PYTHON) -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then \
	  PYTHONPATH=. $(PYTHON) scripts/gpu_check.py --quick --out results/bench/quick && \
	  { for k in $$(seq 0 $$(($(WARM) - 1))); do PYTHONPATH=. timeout 120 $(PYTHON) scripts/gpu_check.py --warm $$k/$(WARM) >/dev/null 2>&1 & done; wait; } && \
	  PYTHONPATH=. $(PYTHON) scripts/gpu_check.py; \
	else echo "gpu-check: no CUDA device here; the CPU pass at small sizes"; PYTHONPATH=. $(PYTHON) scripts/gpu_check.py --device cpu --quick; fi

bench: $(STAMP)
	@mkdir -p results/bench/notebooks
	$(BIN)/papermill --cwd nbs nbs/bench_versions.ipynb results/bench/notebooks/bench_versions.ipynb
	$(BIN)/papermill --cwd nbs nbs/bench_fast.ipynb results/bench/notebooks/bench_fast.ipynb
	$(BIN)/papermill --cwd nbs nbs/bench_train.ipynb results/bench/notebooks/bench_train.ipynb
	$(BIN)/papermill --cwd nbs nbs/bench_vit.ipynb results/bench/notebooks/bench_vit.ipynb

# A one-node SLURM cluster on this machine (root; no systemd needed): Debian's slurm, munge, slurmdbd and MariaDB,
# configured for localhost with one partition `debug`; state, config and logs in /var/lib/posattn-slurm.
slurm-up:
	bash scripts/slurm/install.sh
	bash scripts/slurm/up.sh

slurm-down:
	bash scripts/slurm/down.sh

# The sweep on the real cluster: the smoke grid (2 treatments x 2 RandomStates) as one SLURM array through
# `python -m posattn.sweep --executor slurm`, one task requeued mid-run, every result checked equal (bit for bit) to
# the local executor's; prints the requeue evidence (attempts file, sacct) and its time. Files in
# /var/lib/posattn-slurm/test-sweep/<time>/ (not under /tmp: a cluster's nodes do not share it). The test stops the
# cluster it started (pass or fail); a cluster that was already up (`make slurm-up`) is left running.
test-slurm: $(STAMP)
	bash scripts/slurm/install.sh
	@if timeout 10 sinfo -h >/dev/null 2>&1; then was_up=1; else was_up=0; fi; \
	bash scripts/slurm/up.sh; status=0; $(BIN)/python scripts/slurm/test_sweep.py || status=$$?; \
	if [ $$was_up = 0 ]; then bash scripts/slurm/down.sh; \
	else echo "test-slurm: the cluster was up before the test: left running (make slurm-down stops it)"; fi; exit $$status

# `make docs`: the site in _site/ (git-ignored), built from the notebooks executed as `make test` runs them (IN_TEST=1,
# from nbs/, `#| slow` cells skipped and marked so on the page), with Sphinx, MyST-NB and the book theme; the API
# reference from the docstrings; math by a local MathJax. Open _site/index.html. See scripts/docs_build.py.
docs: $(STAMP)
	$(BIN)/python scripts/docs_build.py --jobs $(DOCS_JOBS)

# `make docs-check`: every page of _site/ in headless Chromium: loads without console errors, no broken image or link,
# no error output, math rendered, nothing from a CDN, the modules' Docs: links name pages that exist; full-page
# screenshots of a few pages in figures/docs/ (look at them).
docs-check: $(STAMP) browser
	$(BIN)/python scripts/docs_check.py --out figures/docs

# Open the notebooks in JupyterLab, from the project's venv, on this machine only (127.0.0.1). The server's root is the
# repository (so the notebooks' ../figures and ../results links work); the file browser opens at nbs/. A notebook is
# saved without its outputs, then cleaned as nbdev-clean would (posattn.jupyter.save_without_outputs, nbs/98_jupyter.ipynb),
# so a save passes `make test`'s sync check. As root (a container) JupyterLab needs --allow-root.
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) --ServerApp.root_dir=. \
	  --LabApp.default_url=/lab/tree/nbs --ContentsManager.pre_save_hook=posattn.jupyter.save_without_outputs \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

# Debian's headless Chromium and its WebDriver, for `make lab-check` (installed once, with apt-get, when missing).
browser:
	@if ! command -v chromium >/dev/null || [ ! -x /usr/bin/chromedriver ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "make browser: chromium and chromium-driver are missing: sudo apt-get install chromium chromium-driver"; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; fi
	@chromium --version 2>/dev/null; /usr/bin/chromedriver --version

# A real browser: run LAB_NOTEBOOKS through JupyterLab's UI in headless Chromium; fail on error outputs, broken images or
# kernel dialogs; save a full-page screenshot of each under figures/lab/. The notebooks are not saved.
lab-check: $(STAMP) browser
	$(BIN)/python scripts/lab_check.py --venv $(VENV) --out figures/lab $(LAB_NOTEBOOKS)
