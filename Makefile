# Two entry points for people: `make demo` and `make test`. Both install first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export NUMBA_CACHE_DIR := $(CURDIR)/.cache/numba

.PHONY: install demo test scale bench clean

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

# Two pytest workers (pytest-xdist), one test file per worker at a time so that a module's shared
# runs (module fixtures) are made once; tests/conftest.py hands out the slowest files first. One
# thread each (torch's default is one per core: two workers would run four threads on two cores).
# The project's bytecode first: where PYTHONDONTWRITEBYTECODE is set (as on our machines) no process writes
# it, and each of the suite's processes (workers, subprocess runs, Ray's workers) compiled thinkprobe again.
TEST_WORKERS ?= 2
test: install
	$(PY) -m compileall -q thinkprobe tests scripts > /dev/null
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not scale"

# The checks at scale (tests marked `scale`), left out of `make test` to keep it short.
scale: install
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q -m scale tests

bench: install
	$(PY) scripts/bench.py

clean:
	rm -rf $(VENV) demo_out .cache
