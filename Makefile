# SPDX-License-Identifier: Apache-2.0
# The two commands of the README: `make run` and `make test`. Everything else is a helper.
JOBS      ?= 2
BUILD     ?= build/release
FUZZBUILD ?= build/fuzz
TSANBUILD ?= build/tsan
UBSANBUILD ?= build/ubsan
CMAKE_FLAGS ?=

.PHONY: all bootstrap configure build run test unit-test fuzz tsan ubsan interop bench soak format clean install package

all: build

bootstrap:
	@bash tools/bootstrap/bootstrap.sh

$(BUILD)/CMakeCache.txt: | bootstrap
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: bootstrap $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/bin/uaplex --config etc/uaplex.toml

# The server, the shipped plugins, the SDK (headers, CMake package) and the default
# configuration under PREFIX; `make package` builds the Debian package (build/…/package).
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

package: build
	cd $(BUILD) && cpack -G DEB

# Unit, integration, ASan and interop tests through ctest, then the bounded fuzz runs.
test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 900
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory tsan
	@$(MAKE) --no-print-directory ubsan

fuzz: bootstrap
	cmake -S . -B $(FUZZBUILD) -DUAPLEX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
	cmake --build $(FUZZBUILD) -j$(JOBS) --target fuzzers
	cd $(FUZZBUILD) && ctest --output-on-failure -L fuzz

# The concurrent paths (tests labelled tsan) under ThreadSanitizer, in their own build; the
# first report ends the test (halt_on_error). docs/testing.md says what they cover.
TSAN_OPTIONS_ALL = halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tools/sanitizers/tsan.supp
tsan: bootstrap
	cmake -S . -B $(TSANBUILD) -DUAPLEX_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
	cmake --build $(TSANBUILD) -j$(JOBS) --target tsan_tests
	cd $(TSANBUILD) && TSAN_OPTIONS="$(TSAN_OPTIONS_ALL)" \
	  ctest --output-on-failure -j$(JOBS) -L tsan --timeout 300

# Every unit, conformance and integration test under UndefinedBehaviorSanitizer, in its own
# build; a report ends the process (-fno-sanitize-recover), so the test fails. -O1 with line
# tables keeps the build short; docs/testing.md says what is left out and why.
UBSAN_OPTIONS_ALL = print_stacktrace=1 halt_on_error=1 suppressions=$(CURDIR)/tools/sanitizers/ubsan.supp
UBSAN_FLAGS = -O1 -gline-tables-only -DNDEBUG
UBSAN_SKIP = ^(sdk_deb_package|sdk_install_example|sdk_nodeset_companion|abi_compat_.*|abi_header_.*|interop.*|netfault)$$
ubsan: bootstrap
	cmake -S . -B $(UBSANBUILD) -DUAPLEX_SANITIZE=undefined -DUAPLEX_ASAN_TESTS=OFF -DUAPLEX_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(UBSAN_FLAGS)" \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(UBSAN_FLAGS)" \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
	cmake --build $(UBSANBUILD) -j$(JOBS)
	cd $(UBSANBUILD) && UBSAN_OPTIONS="$(UBSAN_OPTIONS_ALL)" \
	  ctest --output-on-failure -j$(JOBS) -LE '^(interop|tidy|layers)$$' -E '$(UBSAN_SKIP)' --timeout 900

# Microbenchmarks, then the side-by-side scenarios against uaplex and the node-opcua peer
# (tools/bench/run_bench.py; e.g. BENCH_ARGS="--rounds 5" or "--scenarios 'read 10x100'").
BENCH_ARGS ?=
bench: build
	cmake --build $(BUILD) -j$(JOBS) --target bench
	@for b in $(BUILD)/bin/bench_*; do [ -x "$$b" ] && "$$b" || exit 1; done
	@cd tools/bench/peers && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund; }
	python3 tools/bench/run_bench.py --build $(BUILD) $(BENCH_ARGS)
	python3 tools/bench/async_bench.py --build $(BUILD)
	python3 tools/bench/memory_churn.py --build $(BUILD) --max-ratio 1.10
	tools/bench/pubsub_bytes.sh $(BUILD) 100
	tools/bench/pubsub_latency.sh $(BUILD) json
	tools/bench/pubsub_latency.sh $(BUILD) uadp
	tools/bench/pubsub_latency.sh $(BUILD) json 0
	@[ "$(BENCH_SOAK)" = 0 ] || $(MAKE) --no-print-directory soak DURATION=$(BENCH_SOAK)

# One server under mixed load (read, write, subscriptions, events, session churn, a request
# queue hot swap every minute) for DURATION s; samples into $(BUILD)/soak/soak.csv and .png,
# fails on an error response, RSS or descriptor growth or a p99 drift (tools/bench/soak.py).
# `make bench` ends with a BENCH_SOAK s run (600; 0 skips it).
DURATION ?= 3600
BENCH_SOAK ?= 600
SOAK_ARGS ?=
# Debian's python3-matplotlib plots, for Debian's interpreter
SOAK_PYTHON ?= $(shell [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)
soak: build
	cmake --build $(BUILD) -j$(JOBS) --target uaplex-bench
	@cd tests/interop/client && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund --loglevel=error; }
	$(SOAK_PYTHON) tools/bench/soak.py --build $(BUILD) --duration $(DURATION) $(SOAK_ARGS)

format:
	git ls-files '*.cpp' '*.hpp' '*.h' '*.c' | xargs clang-format -i

clean:
	rm -rf build
