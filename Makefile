# rayop build. Three static archives, one per side of the wall:
#   libcommon.a   util/ and kobj/ (Kubernetes-object helpers): linked by both sides
#   librayop.a    the operator's modules (kube cache ipc watcher reconcilers cmd)
#   libkubesim.a  the simulator (kubesim/): never linked into bin/rayop
# Binaries from *_main.c files (a kubesim/ main links libkubesim, any other main librayop;
# bench mains link both; tests/tools mains, test-only binaries built with bench-bins, the
# operator side), cmocka unit tests from tests/unit/test_*.c, libFuzzer targets
# from tests/fuzz/fuzz_*.c (tests and fuzz targets link all three).
# Modules never edit this file: a new .c under a module folder is picked up by the wildcards.
#
#   make            release build (-O2) of bin/kubesim, bin/rayop, ...
#   make test       deps, release + ASan/UBSan unit tests, short fuzz runs, integration tests
#   make deps       install the Debian packages the build and tests need
#   make bench      benchmarks (not in CI)     make bench-sim   kubesim throughput
#   make kubesim-scale   the simulated cluster alone at 40,000 Pods, ratios vs a baseline
#   make fuzz       every fuzz target FUZZ_SECONDS (120) with a random seed (not in CI)
#   make fuzz-long  every fuzz target WEIGHT x FUZZ_UNIT (60) seconds, weighted by how much
#                   outside input it parses, with a table of executions and coverage
#   make chaos      the chaos soak, CHAOS_SECONDS (600) from CHAOS_SEED (1), then
#                   CHAOS_STEADY_SECONDS (240) without kills for the memory invariant (not in CI;
#                   make test runs its 35 s smoke, tests/integration/chaos_smoke.py)
#   make chaos-asan the soak on ASan/UBSan builds, CHAOS_SECONDS (240)
#   make demo       the README's main job (SCHEDULER=volcano: under Volcano gang scheduling)
#   make diff-kuberay   rayop vs the real KubeRay, object by object (docs/kuberay-differences.md)
#   make peers      the real peers (kube-apiserver, etcd, kwok, helm, Ray venv) into .peers/
MODE    ?= rel
COMMON_DIRS := util kobj
OP_DIRS     := kube dashboard cache ipc watcher reconcilers cmd
SIM_DIRS    := kubesim
SRCDIRS     := $(COMMON_DIRS) $(OP_DIRS) $(SIM_DIRS)
CC      ?= cc
NPROC   := $(shell nproc 2>/dev/null || echo 2)

CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -g -Wall -Wextra -Werror -Wshadow \
                 -Wno-missing-field-initializers -fno-strict-aliasing -I. -MMD -MP
ifeq ($(MODE),rel)
CFLAGS_MODE := -O2
LDFLAGS_MODE :=
else ifeq ($(MODE),asan)
CFLAGS_MODE := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS_MODE := -fsanitize=address,undefined
else ifeq ($(MODE),fuzz)
CC := clang
CFLAGS_MODE := -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -DRAYOP_FUZZ
LDFLAGS_MODE := -fsanitize=fuzzer,address,undefined
endif
# Release builds run on jemalloc (util/heap.c, docs/dependencies.md); the sanitizer
# builds keep the sanitizer's allocator. HEAP=glibc builds a release without it.
HEAP    ?= $(if $(filter rel,$(MODE)),jemalloc,glibc)
B       := build/$(MODE)$(if $(filter rel,$(MODE)),$(if $(filter glibc,$(HEAP)),-glibc))
ifeq ($(HEAP),jemalloc)
CFLAGS_MODE += -DRAYOP_JEMALLOC
HEAP_LDLIBS := -ljemalloc
endif
CFLAGS  := $(CFLAGS_COMMON) $(CFLAGS_MODE) $(EXTRA_CFLAGS)
LDLIBS  := -lmicrohttpd -lgnutls -lcurl -lmsgpackc -lcjson -lyaml -luv -lpthread -lrt -lm $(HEAP_LDLIBS)
# kubesim alone: its store keeps objects' text zstd-compressed (docs/dependencies.md)
SIM_LDLIBS := -lzstd

libsrcs    = $(shell find $(1) -name '*.c' ! -name '*_main.c' 2>/dev/null | sort)
COMMON_SRCS := $(call libsrcs,$(COMMON_DIRS))
OP_SRCS     := $(call libsrcs,$(OP_DIRS))
SIM_SRCS    := $(call libsrcs,$(SIM_DIRS))
LIB_SRCS  := $(COMMON_SRCS) $(OP_SRCS) $(SIM_SRCS)
MAIN_SRCS := $(shell find $(SRCDIRS) -name '*_main.c' 2>/dev/null | sort)
# tests/unit/ tests the operator (and the shared layer); tests/unit/kubesim/ the simulator.
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
SIM_UNIT_SRCS := $(sort $(wildcard tests/unit/kubesim/test_*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
BENCH_SRCS := $(sort $(wildcard bench/*_main.c))
# Test-only binaries (bin/rayop_test: bin/rayop plus the host self-test kind); operator side.
TOOL_SRCS := $(sort $(wildcard tests/tools/*_main.c))

LIB_OBJS  := $(LIB_SRCS:%.c=$(B)/%.o)
LIBCOMMON := $(B)/libcommon.a
LIBRAYOP  := $(B)/librayop.a
LIBSIM    := $(B)/libkubesim.a
# Link order: the users before what they use.
LIB       := $(LIBRAYOP) $(LIBSIM) $(LIBCOMMON)
BINS      := $(foreach s,$(MAIN_SRCS),bin/$(patsubst %_main,%,$(notdir $(basename $(s)))))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%) $(SIM_UNIT_SRCS:tests/unit/kubesim/%.c=$(B)/tests/%)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(B)/fuzz/%)
BENCH_BINS := $(foreach s,$(BENCH_SRCS) $(TOOL_SRCS),bin/$(patsubst %_main,%,$(notdir $(basename $(s)))))

.PHONY: all deps test fuzz fuzz-long chaos chaos-asan unit-bins bench-bins fuzz-bins bench bench-sim kubesim-scale demo peers proto-tables diff-kuberay clean
all: $(BINS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIBCOMMON): $(COMMON_SRCS:%.c=$(B)/%.o)
$(LIBRAYOP): $(OP_SRCS:%.c=$(B)/%.o)
$(LIBSIM): $(SIM_SRCS:%.c=$(B)/%.o)
$(LIB):
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# A binary is named after its *_main.c file: kubesim/main/kubesim_main.c -> bin/kubesim.
# The archives a main links say which side of the wall it is on.
main_libs = $(if $(filter kubesim/%,$(1)),$(LIBSIM) $(LIBCOMMON),$(if $(filter bench/%,$(1)),$(LIB),$(LIBRAYOP) $(LIBCOMMON)))
define bin_rule
bin/$(patsubst %_main,%,$(notdir $(basename $(1)))): $(B)/$(basename $(1)).o $(call main_libs,$(1))
	@mkdir -p bin
	$$(CC) $$(LDFLAGS_MODE) $$^ -o $$@ $$(LDLIBS) $(if $(filter kubesim/% bench/%,$(1)),$$(SIM_LDLIBS))
endef
$(foreach s,$(MAIN_SRCS) $(BENCH_SRCS) $(TOOL_SRCS),$(eval $(call bin_rule,$(s))))

$(B)/tests/%: tests/unit/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS_MODE) $(LIB) -lcmocka $(LDLIBS) $(SIM_LDLIBS)

$(B)/tests/%: tests/unit/kubesim/%.c $(LIBSIM) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS_MODE) $(LIBSIM) $(LIBCOMMON) -lcmocka $(LDLIBS) $(SIM_LDLIBS)

$(B)/fuzz/%: tests/fuzz/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS_MODE) $(LIB) $(LDLIBS) $(SIM_LDLIBS)

unit-bins: $(UNIT_BINS)
bench-bins: $(BENCH_BINS)
fuzz-bins: $(FUZZ_BINS)

deps:
	@sh tools/deps.sh

test: deps
	$(MAKE) -j$(NPROC) all unit-bins bench-bins
	$(MAKE) -j$(NPROC) MODE=asan unit-bins build/asan/soak/rayop
	$(MAKE) -j$(NPROC) MODE=fuzz fuzz-bins
	@if why=$$(sh tools/peers/build.sh --check); then sh tools/peers/build.sh; \
	else echo "make test: the real tier (real_*) is skipped: $$why"; fi
	sh tests/run.sh

# Long, randomly seeded fuzzing of every target (not in CI): FUZZ_SECONDS each.
fuzz: deps
	$(MAKE) -j$(NPROC) MODE=fuzz fuzz-bins
	FUZZ_SECONDS=$${FUZZ_SECONDS:-120} FUZZ_SEED=$${FUZZ_SEED:-0} ONLY=fuzz_ sh tests/run.sh

# Long fuzzing, each target's time by how much outside input it parses (tools/fuzz_long.sh:
# FUZZ_UNIT seconds per weight unit, 60 by default); prints the per-target table.
fuzz-long: deps
	$(MAKE) -j$(NPROC) MODE=fuzz fuzz-bins
	sh tools/fuzz_long.sh

# kill -9 of any rayop process, API faults and kubesim restarts under churn, with invariants
# checked live and at the end (tests/integration/chaos/chaos.py); last line "chaos: N violations".
chaos: deps all
	RAYOP_SHARED=$${RAYOP_SHARED:-$(CURDIR)/../shared} python3 tests/integration/chaos/chaos.py \
		--seconds $${CHAOS_SECONDS:-600} --seed $${CHAOS_SEED:-1}

# The same soak on ASan/UBSan builds of rayop and kubesim (CHAOS_SECONDS defaults to 240:
# the sanitizers make everything 2-3x slower); a sanitizer report anywhere is a violation.
# The two binaries go to build/asan/soak/, leaving bin/ as it is.
chaos-asan: deps
	$(MAKE) -j$(NPROC) MODE=asan build/asan/soak/rayop build/asan/soak/kubesim
	RAYOP_SHARED=$${RAYOP_SHARED:-$(CURDIR)/../shared} python3 tests/integration/chaos/chaos.py \
		--seconds $${CHAOS_SECONDS:-240} --seed $${CHAOS_SEED:-1} --steady-seconds $${CHAOS_STEADY_SECONDS:-0} \
		--rayop build/asan/soak/rayop --kubesim build/asan/soak/kubesim

$(B)/soak/rayop: $(B)/cmd/rayop_main.o $(LIBRAYOP) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_MODE) $^ -o $@ $(LDLIBS)
$(B)/soak/kubesim: $(B)/kubesim/main/kubesim_main.o $(LIBSIM) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_MODE) $^ -o $@ $(LDLIBS) $(SIM_LDLIBS)

bench: deps all $(BENCH_BINS)
	sh bench/run.sh

bench-sim: deps all $(BENCH_BINS)
	sh bench/run.sh sim

# The simulated cluster alone at KSCALE_PODS (40000) Pods, against a baseline commit (issue 18).
kubesim-scale: deps all
	sh bench/kubesim-scale.sh

demo: deps all
	SCHEDULER=$(SCHEDULER) bash tools/demo.sh

# Real Kubernetes control plane, etcd, kwok, helm and the Ray venv, built once per content hash
# under ~/.cache/rayop-peers and linked into .peers/ (tools/peers/build.sh).
peers:
	sh tools/peers/build.sh

# The real KubeRay operator beside rayop on one kubesim, every sample (tools/kuberay_diff.py);
# fails on a difference docs/kuberay-differences.md does not explain.
diff-kuberay: all
	sh tools/peers/build.sh kuberay
	python3 tools/kuberay_diff.py

# kubesim's protobuf tables (kubesim/api/proto_tables.c) from the k8s.io/api struct tags; needs Go.
proto-tables:
	cd tools/protogen && GOTOOLCHAIN=local GOFLAGS=-mod=mod go run . $$(awk '$$1 == "k8s.io/api" {print $$2}' go.mod) \
		> ../../kubesim/api/proto_tables.c.tmp && mv ../../kubesim/api/proto_tables.c.tmp ../../kubesim/api/proto_tables.c

clean:
	rm -rf build bin

-include $(LIB_OBJS:.o=.d) $(MAIN_SRCS:%.c=$(B)/%.d) $(BENCH_SRCS:%.c=$(B)/%.d) $(TOOL_SRCS:%.c=$(B)/%.d)
-include $(UNIT_BINS:=.d) $(FUZZ_BINS:=.d)
