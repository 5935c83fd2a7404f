# Two entry points for people: `make demo` and `make test`. Both install first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export NUMBA_CACHE_DIR := $(CURDIR)/.cache/numba

.PHONY: install demo test bench clean

install: $(VENV)/.installed

# torch is pinned and installed first: an unpinned torch would pull a multi-GB CUDA build.
$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $@

demo: install
	$(VENV)/bin/thinkprobe profile thinkprobe/samples/traces.jsonl -o demo_out

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) scripts/bench.py

clean:
	rm -rf $(VENV) demo_out .cache
