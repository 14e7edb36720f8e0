# Two commands work on a fresh machine with only Python 3.11 and Debian's tools:
#   make test   - the whole test suite (slow suites behind --runslow: make test-slow)
#   make demo   - the main example, written into out/
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The model's matrices are small: multithreaded BLAS only adds overhead (and can be 100x
# slower on a loaded 2-core machine), so one thread unless the caller says otherwise.
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: test test-slow demo bench bench-wp bench-contact docs dot clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	@touch $(STAMP)

# Graphviz's `dot` renders the diagrams. Installed when missing and running as root;
# otherwise a clear message (the DOT text is still written without it).
dot:
	@if command -v dot >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's graphviz package for the dot program"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) \
	  || echo "WARNING: could not install graphviz; diagrams will be written as DOT text only"; \
	else \
	  echo "NOTE: graphviz's dot program is missing: install it with 'sudo apt-get install graphviz'."; \
	  echo "      Diagrams are still written as DOT text; SVG/PNG/PDF rendering tests are skipped."; \
	fi

test: $(STAMP) dot
	$(PY) -m pytest -q

test-slow: $(STAMP) dot
	$(PY) -m pytest -q --runslow

demo: $(STAMP) dot
	$(PY) examples/three_body_prismatic.py --out out/three_body_prismatic

# The user guide (mkdocs + mkdocstrings) into build/site; --strict: any warning fails.
docs: $(STAMP)
	@$(PY) -c "import mkdocs, mkdocstrings, mkdocstrings_handlers.python" 2>/dev/null \
	  || $(PY) -m pip install --quiet -e ".[docs]"
	$(PY) -m mkdocs build --strict --site-dir build/site

# the peers measured side by side (Pinocchio, MuJoCo, PyDy, Exudyn): installed if missing
bench: $(STAMP)
	@$(PY) -c "import pinocchio, mujoco, pydy, exudyn" 2>/dev/null \
	  || $(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/run.py
	$(PY) benchmarks/work_precision.py

# work-precision diagrams alone (issue 22); WP_ARGS=--quick for the short set
bench-wp: $(STAMP)
	@$(PY) -c "import pinocchio, mujoco" 2>/dev/null \
	  || $(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/work_precision.py $(WP_ARGS)

# contact on gymnasium's and dm_control's MJCF robots beside MuJoCo (issue 35); CONTACT_ARGS=--span 1
bench-contact: $(STAMP)
	@$(PY) -c "import mujoco, gymnasium" 2>/dev/null \
	  || $(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/contact.py $(CONTACT_ARGS)

clean:
	rm -rf $(VENV) out build *.egg-info
