# hutch — see README.md. `make test` is what CI runs (.ci/run).
GO       ?= go
TAGS     := exclude_graphdriver_btrfs exclude_graphdriver_zfs containers_image_openpgp
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS  := -s -w -X github.com/hutch-engine/hutch/version.Commit=$(COMMIT)
GOFLAGS_BUILD := -trimpath -tags "$(TAGS)" -ldflags "$(LDFLAGS)"
# hutch-runtime runs twice per container start (as itself, then re-executed
# as the container's init): linked statically, neither run loads libc
# through ld.so (docs/architecture.md, "hutch-runtime"). The seccomp tag
# compiles runc's seccomp support, which links libseccomp (libseccomp.a).
RUNTIME_FLAGS := -trimpath -tags "$(TAGS) osusergo netgo seccomp" -ldflags "$(LDFLAGS) -linkmode external -extldflags -static"
export CGO_ENABLED := 1
# make install: as root into /usr/local, as a user into ~/.local; hutch
# finds its helper binaries beside itself. DESTDIR stages a package.
ifeq ($(shell id -u),0)
PREFIX   ?= /usr/local
else
PREFIX   ?= $(HOME)/.local
endif
BINDIR   ?= $(PREFIX)/bin
BINARIES := hutch hutch-runtime hutch-shim hutch-ns hutch-keeper hutch-init hutch-buildkit hutch-swarm
# hutch-keeper holds a live-restore daemon's namespaces for its whole life:
# C, linked statically, with musl where musl-gcc is installed (Debian's
# musl-tools: some 80 KB, all of it resident), else with glibc (800 KB).
KEEPER_SRC := $(addprefix rootless/keeper/ckeeper/,keeper.c port.c util.c msg.c)
KEEPER_CC  ?= $(shell command -v musl-gcc 2>/dev/null || echo $(CC))

.PHONY: all build libseccomp install uninstall test unit integration compat lint run demo bench clean

all: build

build: libseccomp
	$(GO) build $(GOFLAGS_BUILD) -o bin/hutch ./cmd/hutch
	$(GO) build $(RUNTIME_FLAGS) -o bin/hutch-runtime ./cmd/hutch-runtime
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o bin/hutch-shim ./cmd/hutch-shim
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o bin/hutch-ns ./cmd/hutch-ns
	$(KEEPER_CC) -static -s -Os -Wall -Wextra -DHUTCH_KEEPER_MAIN -o bin/hutch-keeper $(KEEPER_SRC)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o bin/hutch-init ./cmd/hutch-init
	$(GO) build $(GOFLAGS_BUILD) -o bin/hutch-buildkit ./cmd/hutch-buildkit
	$(GO) build $(GOFLAGS_BUILD) -o bin/hutch-swarm ./cmd/hutch-swarm

# hutch-runtime installs containers' seccomp filters with libseccomp, linked
# statically: say what to install rather than fail in cgo.
libseccomp:
	@pkg-config --exists libseccomp 2>/dev/null && \
	  test -f "$$(pkg-config --variable=libdir libseccomp)/libseccomp.a" || { \
	  echo "make build: hutch-runtime needs libseccomp's static library and pkg-config:" >&2; \
	  echo "  Debian/Ubuntu: apt-get install libseccomp-dev pkg-config" >&2; \
	  echo "  Fedora: dnf install libseccomp-devel libseccomp-static pkgconf" >&2; \
	  echo "  (as root, bash contrib/test/setup-root.sh installs everything the tests need)" >&2; \
	  exit 1; }

# The binaries into $(DESTDIR)$(BINDIR); `hutch install` then sets up the
# service and the docker context (docs/install.md).
install: build
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(addprefix bin/,$(BINARIES)) $(DESTDIR)$(BINDIR)/
	@echo "installed in $(DESTDIR)$(BINDIR); next: $(BINDIR)/hutch install"

# Removes what install put there (and the bin directory if that leaves it
# empty). `hutch uninstall` first removes the service and the context.
uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(BINARIES))
	-rmdir --ignore-fail-on-non-empty $(DESTDIR)$(BINDIR)

# As root: installs the Debian packages, creates the unprivileged test user
# and runs the integration tests as that user. As a user: runs them directly.
test:
	bash contrib/test/run.sh

unit:
	$(GO) test -tags "$(TAGS)" -race -count=1 ./...

integration: build
	$(GO) test -tags "$(TAGS) integration" -count=1 -v ./integration/

# Docker Engine's own integration suite against hutch, judged by
# contrib/compat/known-failures.txt. COMPAT_ARGS go to `compat run`
# (e.g. COMPAT_ARGS="-pkgs container -run TestKill").
compat:
	bash contrib/compat/run.sh $(COMPAT_ARGS)

lint:
	$(GO) vet -tags "$(TAGS)" ./...
	$(GO) vet -tags "$(TAGS) integration" ./integration/
	$(GO) vet -tags "$(TAGS) seccomp" ./engine/shim/oci/... ./cmd/hutch-runtime
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags "$(TAGS)" ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags "$(TAGS) seccomp" ./engine/shim/oci/... ./cmd/hutch-runtime

run: build
	bin/hutch daemon

# Starts the engine as an unprivileged user and shows it working (offline).
demo:
	bash contrib/demo.sh

# Measures hutch against baselines taken in the same run (DESIGN §7):
# a table, bench/results/latest.json and latency.png. BENCH_ARGS go to
# contrib/bench (e.g. BENCH_ARGS="-runs 60").
bench:
	bash contrib/bench/run.sh $(BENCH_ARGS)

clean:
	rm -rf bin
