VENV ?= .venv
# Python may be told not to cache bytecode (PYTHONDONTWRITEBYTECODE, set on some machines, the CI
# one among them): every `sparkcdc run` of the tests then compiled sparkcdc's modules again (about
# 0.6 s of CPU each) and every pytest lane its test modules (about 7 s). Here it caches them, in
# the git-ignored __pycache__ folders.
unexport PYTHONDONTWRITEBYTECODE
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: deps promtool k8s-bin test unit container images lint bench bench-binlog bench-latency bench-stream demo crd clean

deps:
	@bash hack/bootstrap.sh

# promtool, which checks and unit-tests the chart's alert rules (tests/e2e/test_chart_monitoring.py):
# built from Go modules once, before any test's timeout starts (hack/promtool.sh; cached).
promtool:
	@bash hack/promtool.sh >/dev/null

# The control plane's binaries (kube-apiserver, kube-controller-manager, kubectl, etcd, helm) for the
# e2e and container tests, built from Go modules once and cached (hack/k8s-bin.sh), here rather than
# in a fixture: cold, the build takes longer than a test's timeout while the other lanes run.
k8s-bin:
	@bash hack/k8s-bin.sh >/dev/null

# The cluster tests (e2e, container) and the local ones (unit, integration) side by side: hack/test.sh.
test: deps promtool k8s-bin
	PY=$(PY) bash hack/test.sh $(PYTEST_ARGS)

unit: deps
	$(PY) -m pytest -m unit $(PYTEST_ARGS)

# The driver/executor and operator images, with podman (hack/images.sh: cached by a hash of their inputs).
images:
	@bash hack/images.sh

container: deps images k8s-bin
	$(PY) -m pytest -m container $(PYTEST_ARGS)

lint: deps
	$(VENV)/bin/ruff check operator tests benchmarks
	$(VENV)/bin/ruff format --check operator tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

crd: deps
	$(VENV)/bin/sparkcdc crd > crds/cdcpipelines.sparkcdc.io.yaml
	$(PY) -m sparkcdc.api.reference > docs/reference.md
	bash hack/sync-chart-crd.sh
	$(PY) -m sparkcdc.configuration > docs/configuration.md

bench: deps
	$(PY) benchmarks/snapshot.py

bench-binlog: deps
	$(PY) benchmarks/binlog.py

bench-latency: deps
	$(PY) benchmarks/latency.py

# sparkcdc's live binlog path next to Debezium and Flink CDC (../shared/peers; needs Java 17 and Maven).
bench-stream: deps
	$(PY) benchmarks/stream.py

demo: deps
	$(PY) -m sparkcdc.demo

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
