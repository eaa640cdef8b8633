# The README's two commands: `make demo` (main job end to end on the embedded broker) and `make test`.
# Both set up everything they need on a fresh machine: the venv, the package, the Kafka/Spark jars, PostgreSQL.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml setup.py devtools/pyproject.toml | sha1sum | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: install system-deps demo test lint soak bench clean

# Both distributions, editable: kafka-rekey (the product) and kafka-rekey-dev (devtools/: the embedded stack, chaos,
# bench, demo) with the repository's test tools.
$(STAMP): pyproject.toml setup.py devtools/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip uninstall -q -y rekey 2>/dev/null || true
	$(BIN)/pip install -q -e . -e './devtools[test]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

# Java 17+ and Maven fetch and run Kafka and Spark; PostgreSQL backs the sink tests; promtool (prometheus) checks
# the chart's alert rules. Installed only if missing.
system-deps:
	@missing=""; \
	command -v java >/dev/null || missing="$$missing openjdk-17-jre-headless"; \
	command -v mvn >/dev/null || missing="$$missing maven"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

demo: install system-deps
	$(BIN)/rekey demo

lint: install
	$(BIN)/ruff check .
	@# mypy does not run the editable install's import hook: it reads the package through a view of symlinks.
	mkdir -p .cache/typecheck/kafka_rekey
	for folder in services shared spark_backfill; do ln -sfn ../../../$$folder .cache/typecheck/kafka_rekey/$$folder; done
	MYPYPATH=.cache/typecheck $(BIN)/mypy -p kafka_rekey.shared

test: install system-deps lint
	$(BIN)/pytest -m "not soak" --durations=20 $(PYTEST_ARGS)

soak: install system-deps
	$(BIN)/pytest -m soak $(PYTEST_ARGS)

clean:
	-$(BIN)/rekey broker stop
	rm -rf var .cache/jars .cache/dist
