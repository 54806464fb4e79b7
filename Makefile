# rayop build. One static archive of every module, binaries from *_main.c files,
# cmocka unit tests from tests/unit/test_*.c, libFuzzer targets from tests/fuzz/fuzz_*.c.
# Modules never edit this file: a new .c under a module folder is picked up by the wildcards.
#
#   make            release build (-O2) of bin/kubesim, bin/rayop, ...
#   make test       deps, release + ASan/UBSan unit tests, short fuzz runs, integration tests
#   make deps       install the Debian packages the build and tests need
#   make bench      benchmarks (not in CI)     make bench-sim   kubesim throughput
#   make fuzz       every fuzz target FUZZ_SECONDS (120) with a random seed (not in CI)
#   make demo       the README's main job
#   make peers      the real peers (kube-apiserver, etcd, kwok, helm, Ray venv) into .peers/
MODE    ?= rel
B       := build/$(MODE)
SRCDIRS := util sim kube cache ipc watcher reconcilers cmd
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
CFLAGS  := $(CFLAGS_COMMON) $(CFLAGS_MODE) $(EXTRA_CFLAGS)
LDLIBS  := -lmicrohttpd -lgnutls -lcurl -lmsgpackc -lcjson -lyaml -luv -lpthread -lrt -lm

LIB_SRCS  := $(shell find $(SRCDIRS) -name '*.c' ! -name '*_main.c' 2>/dev/null | sort)
MAIN_SRCS := $(shell find $(SRCDIRS) -name '*_main.c' 2>/dev/null | sort)
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
BENCH_SRCS := $(sort $(wildcard bench/*_main.c))

LIB_OBJS  := $(LIB_SRCS:%.c=$(B)/%.o)
LIB       := $(B)/librayop.a
BINS      := $(foreach s,$(MAIN_SRCS),bin/$(patsubst %_main,%,$(notdir $(basename $(s)))))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(B)/fuzz/%)
BENCH_BINS := $(foreach s,$(BENCH_SRCS),bin/$(patsubst %_main,%,$(notdir $(basename $(s)))))

.PHONY: all deps test fuzz unit-bins bench-bins fuzz-bins bench bench-sim demo peers clean
all: $(BINS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# A binary is named after its *_main.c file: sim/kubesim_main.c -> bin/kubesim.
define bin_rule
bin/$(patsubst %_main,%,$(notdir $(basename $(1)))): $(B)/$(basename $(1)).o $(LIB)
	@mkdir -p bin
	$$(CC) $$(LDFLAGS_MODE) $$^ -o $$@ $$(LDLIBS)
endef
$(foreach s,$(MAIN_SRCS) $(BENCH_SRCS),$(eval $(call bin_rule,$(s))))

$(B)/tests/%: tests/unit/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS_MODE) $(LIB) -lcmocka $(LDLIBS)

$(B)/fuzz/%: tests/fuzz/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS_MODE) $(LIB) $(LDLIBS)

unit-bins: $(UNIT_BINS)
bench-bins: $(BENCH_BINS)
fuzz-bins: $(FUZZ_BINS)

deps:
	@sh tools/deps.sh

test: deps
	$(MAKE) -j$(NPROC) all unit-bins bench-bins
	$(MAKE) -j$(NPROC) MODE=asan unit-bins
	$(MAKE) -j$(NPROC) MODE=fuzz fuzz-bins
	sh tests/run.sh

# Long, randomly seeded fuzzing of every target (not in CI): FUZZ_SECONDS each.
fuzz: deps
	$(MAKE) -j$(NPROC) MODE=fuzz fuzz-bins
	FUZZ_SECONDS=$${FUZZ_SECONDS:-120} FUZZ_SEED=$${FUZZ_SEED:-0} ONLY=fuzz_ sh tests/run.sh

bench: deps all $(BENCH_BINS)
	sh bench/run.sh

bench-sim: deps all $(BENCH_BINS)
	sh bench/run.sh sim

demo: deps all
	bash tools/demo.sh

# Real Kubernetes control plane, etcd, kwok, helm and the Ray venv, built once per content hash
# under ~/.cache/rayop-peers and linked into .peers/ (tools/peers/build.sh).
peers:
	sh tools/peers/build.sh

clean:
	rm -rf build bin

-include $(LIB_OBJS:.o=.d) $(MAIN_SRCS:%.c=$(B)/%.d)
