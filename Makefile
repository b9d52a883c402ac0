# Two entry points for a fresh machine: `make demo` and `make test`.
# Both create (or reuse) the virtualenv .venv inside the repo and install the
# project with its test dependencies into it; nothing outside the repo is used.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_OUT := out/demo
# Python versions tested besides the main virtualenv's, each with the base install
# (setup.py's python_requires); one that is not installed here is said and skipped.
OTHER_PYTHONS ?= 3.10 3.12 3.13

.PHONY: demo test install protos lint-docker clean check-base check-pythons dgl test-dgl docs fuzz

# The PyTorch that [test] gets through the [torch] extra: the CPU wheel, installed first so
# that the extra's range is met by it (an unpinned torch would pull a multi-GB CUDA build).
TORCH_CPU ?= torch==2.13.0

# Reinstall when the declared dependencies change.
$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet '$(TORCH_CPU)'
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Samples the demo graph, shows one decoded subgraph and the statistics (HTML report in
# out/demo/stats/), then validates every record.
demo: $(STAMP)
	$(VENV)/bin/sample --graph examples/mag_tiny/graph_schema.pbtxt \
	    --spec examples/mag_tiny/sampling_spec.pbtxt \
	    --seeds examples/mag_tiny/seeds.csv \
	    --output $(DEMO_OUT)/
	@echo
	$(VENV)/bin/sample-inspect $(DEMO_OUT) --max-items 5
	@echo
	$(VENV)/bin/sample-stats $(DEMO_OUT) --quiet
	@echo
	$(VENV)/bin/sample-check $(DEMO_OUT)

# The whole suite, then sampler.dgl's tests in DGL's virtualenv, the base install on its
# own and the other Python versions.
test: $(STAMP)
	$(PY) -m pytest -q -n 2 tests
	$(MAKE) --no-print-directory test-dgl check-base check-pythons

# The base install (no extras) in a virtualenv of its own, as a user gets it from
# `pip install .`: both engines sample the demo, byte for byte alike, and nothing heavy
# is installed. Dependencies are reinstalled when setup.py changes, the project
# itself on every run.
BASE_VENV := .venv-base
$(BASE_VENV)/.installed: setup.py
	rm -rf $(BASE_VENV)
	$(PYTHON) -m venv $(BASE_VENV)
	$(BASE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BASE_VENV)/bin/python -m pip install --quiet .
	touch $@

check-base: $(BASE_VENV)/.installed
	$(BASE_VENV)/bin/python -m pip install --quiet --no-deps --force-reinstall .
	$(BASE_VENV)/bin/python .ci/check_base.py $(BASE_VENV)

# Each other Python version: the base install plus the test tools ([test-base]), and the
# tests that need nothing more and touch what differs between versions: the sampling
# core (numpy), every reader (pyarrow, csv, zlib), local and gs:// files, both engines
# end to end, the extras' one-line errors.
BASE_TESTS := tests/sampler/core tests/unigraph/test_formats.py \
    tests/unigraph/test_table_errors.py tests/unigraph/test_tfrecord.py \
    tests/unigraph/test_gcs.py tests/test_extras.py tests/pipelines/test_sample_reproducible.py
check-pythons:
	@for v in $(OTHER_PYTHONS); do \
	    py=$$(ls $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.*/bin/python$$v 2>/dev/null | tail -1); \
	    [ -n "$$py" ] || py=$$(command -v python$$v); \
	    if [ -z "$$py" ] || ! $$py -c '' 2>/dev/null; then \
	        echo "Python $$v: not installed on this machine, not tested"; continue; fi; \
	    venv=.venv-py$$v; \
	    if [ ! -f $$venv/.installed ] || [ setup.py -nt $$venv/.installed ]; then \
	        rm -rf $$venv && $$py -m venv $$venv && \
	        $$venv/bin/python -m pip install --quiet --upgrade pip && \
	        $$venv/bin/python -m pip install --quiet -e '.[test-base]' && \
	        touch $$venv/.installed || exit 1; \
	    fi; \
	    echo "Python $$v ($$py): base install, $(BASE_TESTS)"; \
	    $$venv/bin/python -m pytest -q -n 2 -p no:cacheprovider $(BASE_TESTS) || exit 1; \
	done

# A long fuzzing session of the five commands (tests/fuzz/, docs/reliability.md): mutated
# tables, schemas, specs, seeds and outputs for FUZZ_MINUTES; the counts go to
# docs/benchmarks/fuzz.json, the first input of each distinct finding to out/fuzz/crashes/.
# Niced: it shares the machine. Exit status 1 when anything was found.
FUZZ_MINUTES ?= 20
fuzz: $(STAMP)
	nice -n 10 $(PY) -m tests.fuzz.long_run --minutes $(FUZZ_MINUTES) \
	    --json docs/benchmarks/fuzz.json --crashes out/fuzz/crashes

# Regenerate the committed _pb2 modules from proto/ (tests/test_protos.py
# fails when they drift).
protos: $(STAMP)
	$(PY) -m pipelines.tools.gen_protos

# DGL's virtualenv (.cache/dgl): sampler.dgl and its tests (tests/dgl, run by `make test`
# there), `benchmark --api/--minibatch --dgl-python .cache/dgl/bin/python`. DGL's wheels
# need their own PyTorch: the last DGL release that installs here and the torch it
# needs (PyPI has no CPU-only torch 2.2 for Linux: about 3 GB with its CUDA wheels,
# 4-5 minutes to install here), plus what `from sampler import api` imports (the project
# itself runs from the work tree, PYTHONPATH). Remade when DGL_PACKAGES change.
DGL_VENV := .cache/dgl
DGL_PACKAGES := torch==2.2.1 dgl==2.1.0 torchdata==0.7.1 'numpy<2' 'pandas<2.3' 'pyarrow<19' \
    pyyaml pydantic 'protobuf>=6.33.5,<7' google-crc32c pytest
DGL_STAMP := $(DGL_VENV)/.installed-$(shell echo "$(DGL_PACKAGES)" | cksum | cut -d' ' -f1)
DGL_TESTS := tests/dgl tests/unigraph/importers/test_dgl_import.py
$(DGL_STAMP):
	rm -rf $(DGL_VENV)
	$(PYTHON) -m venv $(DGL_VENV)
	$(DGL_VENV)/bin/python -m pip install --quiet $(DGL_PACKAGES)
	touch $@
dgl: $(DGL_STAMP)

# sampler.dgl's tests in DGL's virtualenv (they need nothing of tests/conftest.py).
test-dgl: $(DGL_STAMP)
	PYTHONPATH=$(CURDIR) $(DGL_VENV)/bin/python -m pytest -q --noconftest -p no:cacheprovider \
	    $(DGL_TESTS)

# The user guide as a site in site/: the generated pages (command reference, performance
# tables from docs/benchmarks/*.json) are rewritten first; --strict fails on a broken
# page link or anchor (mkdocs.yml).
docs: $(STAMP)
	$(PY) -m pipelines.tools.docs_gen
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

lint-docker: $(STAMP)
	$(VENV)/bin/hadolint Dockerfile

clean:
	rm -rf $(VENV) $(BASE_VENV) .venv-py* out site .pytest_cache .hypothesis .cache *.egg-info
