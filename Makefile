# gpupack: the two commands are `make demo` and `make test`.
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
TSAN_DIR ?= build-tsan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# Sanitizer builds: no optimisation beyond -O1, little debug info (fast to build).
SAN_FLAGS = -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O1 -DGPUPACK_BUILD_BENCH=OFF

.PHONY: all deps deps-build configure build demo image image-local test test-release test-asan test-tsan lint format format-check tidy bench clean

all: build

deps:
	@bash scripts/install-deps.sh

deps-build:
	@bash scripts/install-deps.sh build

configure: deps-build
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUPACK_UNIT_TESTS=ON $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Runs the main job (policy comparison on the built-in synthetic cluster) and
# writes its report to report/. Builds only the gpupack binary.
demo: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target gpupack
	@./$(BUILD_DIR)/gpupack simulate --policy all --seeds 42-44 --out report
	@echo "report written to report/ (report.html: open it in a browser; curves.csv, summary.json, allocation.svg)"

# Every test: the release build's golden (openb), end-to-end, Prometheus, UI
# and heap tests; the unit tests and the fuzz target under ASan + UBSan; the
# threaded tests under TSan; then formatting and clang-tidy. The unit tests
# run once, under the sanitizers (a release copy of them was about 760 CPU-s
# of compile per clean run, bench/RESULTS.md); `make test-fast` runs them in
# the release build.
test: test-release test-asan test-tsan lint
	@echo "make test: all checks passed"

test-release: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUPACK_UNIT_TESTS=OFF $(CMAKE_FLAGS) > /dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@CXX=clang++ cmake -S . -B $(ASAN_DIR) $(SAN_FLAGS) -DGPUPACK_SANITIZE=address,undefined -DGPUPACK_FUZZ=ON > /dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS)
	@cd $(ASAN_DIR) && ASAN_OPTIONS=detect_odr_violation=2:detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

test-tsan: deps
	@CXX=clang++ cmake -S . -B $(TSAN_DIR) $(SAN_FLAGS) -DGPUPACK_SANITIZE=thread > /dev/null
	@cmake --build $(TSAN_DIR) -j $(JOBS)
	@cd $(TSAN_DIR) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --output-on-failure -j $(JOBS)

lint: format-check tidy

format:
	@bash scripts/lint.sh format

format-check: deps
	@bash scripts/lint.sh format-check

tidy: deps
	@bash scripts/lint.sh tidy $(ASAN_DIR)

test-fast: deps build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L unit

bench: build
	@bash bench/run.sh $(BUILD_DIR)

# The image from Containerfile (needs a registry with debian:bookworm), and
# one from this checkout's binary for machines without one (docs/DEPLOY.md).
IMAGE ?= gpupack:0.1.0
image:
	@if command -v podman >/dev/null; then podman build -t $(IMAGE) -f Containerfile .; \
	 else buildah bud -t $(IMAGE) -f Containerfile .; fi

image-local: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target gpupack
	@bash deploy/image/local-image.sh $(BUILD_DIR)/gpupack localhost/$(IMAGE)

clean:
	@rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) report
