# Two commands for a fresh machine with python3 and pip only: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-gpu kernels wheels install-offline plots screenshots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m flows.mst data/graph.parquet

test: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) output

# kernels/cuda/module.fatbin and module.json from kernels/cuda/ (docs/development.md): after any
# change there. Needs nvcc of CUDA 13 (NVCC=path, else the one on PATH) and c++filt; no GPU, no venv.
kernels:
	$(PYTHON) -m kernels.build_module

# For a machine without network access (a GPU node): `make wheels` here puts every wheel the
# project needs, for Python $(WHEEL_PYTHON) on x86-64 Linux, in .whl/ (ignored by git);
# WHEELS_SKIP names distributions the target already has, which are left out. There, from a
# copy of the checkout with .whl/, `make install-offline` creates .venv/ from .whl/ alone; the
# venv sees the system's packages, so what the node has need not travel.
WHEEL_PYTHON ?= 3.12
WHEEL_EXTRAS ?= gpu,test
WHEELS_SKIP ?=
WHEEL_PLATFORMS := manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 \
	manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64

wheels: $(STAMP)
	rm -rf .whl && mkdir -p .whl
	$(PY) -m pip download -q --only-binary=:all: --python-version $(WHEEL_PYTHON) --implementation cp \
		$(addprefix --platform ,$(WHEEL_PLATFORMS)) -d .whl '.[$(WHEEL_EXTRAS)]' 'setuptools>=68'
	for name in $(WHEELS_SKIP); do find .whl -iname "$$(echo $$name | tr - _)-[0-9]*.whl" -delete; done
	@echo "$$(ls .whl | wc -l) wheels, $$(du -sm .whl | cut -f1) MiB in .whl/"

install-offline:
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --no-index --find-links .whl -e '.[$(WHEEL_EXTRAS)]'
	touch $(STAMP)

# A GPU machine's whole suite without a venv: the wheels in .whl/ unpacked into /tmp/site (the
# checkout first on the path), real graphs carried in .realgraphs/; CuPy cases run there.
# The GPU image has pytest-xdist and pytest-timeout: the suite in eight processes takes 3-4
# minutes on an H200 machine (in one process half of it took 7), and a hung test cannot hold the run.
test-gpu:
	python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
	python3 -m compileall -q -j 0 /tmp/site flows tasks kernels > /dev/null  # see benchmarks/h200.sh
	PYTHONPATH=$(CURDIR):/tmp/site GRAPH_REALGRAPHS=$(CURDIR)/.realgraphs NCCL_NVLS_ENABLE=0 \
		python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 200 -rfE --tb=short

# docs/plots/*.png from the records in benchmarks/results/; docs/screenshots/*.png of the
# Prefect UI (a server, a deployment and a run started and stopped by the script; needs the
# chromium browser, e.g. Debian's `apt-get install chromium`).
plots: $(STAMP)
	$(PY) -m pip install -q -e '.[test,plots]'
	$(PY) -m benchmarks.plots

screenshots: $(STAMP)
	$(PY) -m docs.screenshots
