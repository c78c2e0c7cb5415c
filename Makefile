# Two commands for a fresh machine with python3 and pip only: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-gpu bench clean

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

# On the H200 (no registry there): wheels from ../shared/tools/device-wheels.sh carried in .whl/,
# real graphs carried in .realgraphs/. Runs the whole suite; CuPy cases run where a GPU is usable.
test-gpu:
	python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
	PYTHONPATH=/tmp/site:$(CURDIR) GRAPH_REALGRAPHS=$(CURDIR)/.realgraphs python3 -m pytest -q -p no:cacheprovider
