# Two entry points for a fresh machine: `make demo` and `make test`.
# Both create (or reuse) the virtualenv .venv inside the repo and install the
# project with its test dependencies into it; nothing outside the repo is used.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_OUT := out/demo

.PHONY: demo test install protos lint-docker clean

# Reinstall when the declared dependencies change.
$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
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

test: $(STAMP)
	$(PY) -m pytest -q -n 2 tests

# Regenerate the committed _pb2 modules from proto/ (tests/test_protos.py
# fails when they drift).
protos: $(STAMP)
	$(PY) -m pipelines.gen_protos

lint-docker: $(STAMP)
	$(VENV)/bin/hadolint Dockerfile

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis .cache *.egg-info
