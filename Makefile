# hlsfuse developer commands. On a fresh machine: `make demo`, then `make test`.
#
#   setup          .venv with hlsfuse (editable) and its dev tools; g++ and Verilator if missing
#   demo           build the residual-block example; check, run, fuse, compile it to HLS C++ and Verilog,
#                  C-simulate it and simulate the Verilog under Verilator (with its cycle report); then fold
#                  it for a Pynq-Z2 and a ZCU104 and simulate those
#   test           the test suite on both cores (pytest-xdist), its random suites on the seeds listed in them;
#                  prints the 15 slowest tests
#   test-random    the whole suite in the random tier (tests/tiers.py `fresh()`; HLSFUSE_RANDOM_SEED is drawn and
#                  printed, or given to repeat a run): the random suites on fresh seeds (a failure saves its graph)
#                  and the builds make test leaves to this tier (AMD's headers for the designs make test builds
#                  under the work-alikes only, ResNet-8 folded for the other boards, the pyverilator driver for
#                  the designs make test simulates with the native one); then every family of
#                  tests/model_suite.py through convert, run, compile, csim and rtlsim
#   snapshots      refresh tests/snapshots/ after an intended change of the generated code (review the diff)
#   lint           ruff
#   install-check  non-editable install into a fresh venv outside the repo, then the CLI on each example
#                  (check, run, compile --target all)
#   clean          remove the venv and everything generated

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := demo-out
# System tools the hardware tests use: command name and the Debian package that provides it.
TOOLS  := g++:g++ verilator:verilator iverilog:iverilog chromium:chromium dot:graphviz

.PHONY: setup tools demo test test-random snapshots lint install-check clean

setup: $(STAMP)

# Reinstall only when the venv is new or pyproject.toml changed; the system tools come first.
$(STAMP): pyproject.toml | tools
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# Missing tools are installed when running as root with apt-get, otherwise named; the tests
# that need them are skipped outside CI (see tests/conftest.py). Debian's python3 makes venvs
# only with python3-venv.
tools:
	@missing=""; \
	for pair in $(TOOLS); do \
	  command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; \
	done; \
	$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "make setup: installing$$missing"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q$$missing; \
	else \
	  echo "make setup: missing system tools; install them with: sudo apt-get install$$missing"; \
	  echo "make setup: until then the tests that need them are skipped"; \
	fi

demo: setup
	mkdir -p $(DEMO)
	$(BIN)/python examples/residual.py $(DEMO)/residual.json
	$(BIN)/hlsfuse check $(DEMO)/residual.json
	$(BIN)/hlsfuse run $(DEMO)/residual.json --seed 0 -o $(DEMO)/residual_outputs.npz --force
	$(BIN)/hlsfuse fuse $(DEMO)/residual.json --dot $(DEMO)/residual_fusion.dot --force
	$(BIN)/hlsfuse compile $(DEMO)/residual.json -o $(DEMO)/residual --target all --force
	$(BIN)/hlsfuse csim $(DEMO)/residual
	$(BIN)/hlsfuse rtlsim $(DEMO)/residual --frames 8
	@echo "== folded for a Pynq-Z2: the fewest DSPs that run 8600 cycles per frame (docs/folding.md)"
	$(BIN)/hlsfuse compile $(DEMO)/residual.json -o $(DEMO)/residual-pynq-z2 --board pynq-z2 --target-cycles 8600 \
	  --target all --force
	$(BIN)/hlsfuse csim $(DEMO)/residual-pynq-z2
	$(BIN)/hlsfuse rtlsim $(DEMO)/residual-pynq-z2 --frames 4 --driver native
	@echo "== for a ZCU104: the fastest design that fits its 1728 DSPs"
	$(BIN)/hlsfuse compile $(DEMO)/residual.json -o $(DEMO)/residual-zcu104 --board zcu104 --target all --force
	$(BIN)/hlsfuse csim $(DEMO)/residual-zcu104

# The tests of a module with a module fixture (a build its tests share) run on one worker (tests/conftest.py).
PYTEST := $(BIN)/python -m pytest -q -n auto --dist loadgroup --durations=30

test: setup
	$(PYTEST)

# Every test file, not only the random suites: a test that defers a build to the random tier (it parametrizes
# from tiers.fresh(), calls hls_support.csim_both with amd=False or simulates with rtl_design.DRIVER) runs it only
# here.
test-random: setup
	@seed=$${HLSFUSE_RANDOM_SEED:-$$($(BIN)/python -c 'import random; print(random.SystemRandom().randrange(2**32))')}; \
	echo "make test-random: HLSFUSE_RANDOM_SEED=$$seed (set it again to repeat this run)"; \
	HLSFUSE_RANDOM_SEED=$$seed $(PYTEST)
	$(BIN)/python tests/model_suite.py

snapshots: setup
	HLSFUSE_UPDATE_SNAPSHOTS=1 $(BIN)/python -m pytest -q tests/test_snapshots.py

lint: setup
	$(BIN)/ruff check .

# The acceptance check of a regular install: no source tree on the path, run from another folder.
# setuptools builds in build/ of the source tree; stale files there would end up in the wheel.
install-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp" "$(CURDIR)/build"' EXIT; \
	rm -rf "$(CURDIR)/build"; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install --quiet "$(CURDIR)"; \
	cd "$$tmp"; \
	for graph in "$(CURDIR)"/examples/*.json; do \
	  "$$tmp/venv/bin/hlsfuse" check "$$graph"; \
	  "$$tmp/venv/bin/hlsfuse" run "$$graph" -o "$$tmp/outputs.npz" --force; \
	  "$$tmp/venv/bin/hlsfuse" compile "$$graph" -o "$$tmp/design" --target all --force >/dev/null; \
	  test -s "$$tmp/design/verilog/manifest.json"; \
	done; \
	"$$tmp/venv/bin/python" "$(CURDIR)/.ci/check_install.py" "$(CURDIR)"

clean:
	rm -rf $(VENV) $(DEMO) build dist *.egg-info .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
