# motionkit: every target creates .venv and installs what it needs on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# torch/torchvision must match exactly; these two come from local disk on the project machines.
TORCH  ?= torch==2.14.1 torchvision==0.29.1
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test bench lint install clean cuda-check gpu-check doctor

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e '.[dev,dist,detect,viz]'
	# projectaria-tools is only a cross-check reference for tests; its own deps are not needed
	$(BIN)/python -m pip install -q --no-deps 'projectaria-tools==2.3.0' || echo "projectaria-tools unavailable: its cross-checks will skip"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/motionkit fit --take demo --fps 20 --out out/demo

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

# compile the CUDA operators of motionkit/kernels/csrc/ wherever nvcc exists, GPU or not (cached by source hash)
cuda-check: $(STAMP)
	$(BIN)/python -m motionkit.kernels cpu cuda

# on a GPU machine: CUDA parity tests and the GPU benchmarks in one go (about 6 minutes); with .venv if
# it exists, else (a bare GPU node without a package registry) python3 and the wheels in .whl/
gpu-check:
	bash benchmarks/gpu_check.sh

doctor: $(STAMP)
	$(BIN)/motionkit doctor

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check motionkit tests benchmarks examples
	$(BIN)/ruff format --check motionkit tests benchmarks examples

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache
