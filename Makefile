# gpupack: the two commands are `make demo` and `make test`.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test test-fast bench clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Runs the main job (policy comparison on the built-in synthetic cluster) and
# writes its report to report/.
demo: build
	@./$(BUILD_DIR)/gpupack simulate --policy all --seeds 42-44 --out report
	@echo "report written to report/ (curves.csv, summary.json, allocation.svg)"

# Every test: unit tests, then the golden tests on the openb trace (label openb).
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

test-fast: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L unit

bench: build
	@bash bench/run.sh $(BUILD_DIR)

clean:
	@rm -rf $(BUILD_DIR) report
