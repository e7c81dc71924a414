# The Windows suite under Wine (test/windows): fake HCN/HNS DLLs built with mingw-w64, the Windows
# build of Node.js and a WINEPREFIX set to Windows 10, all in the git-ignored .cache/windows.
# `make test` runs it with everything else (test/windows/wine.test.ts); `make test-windows` alone.
WIN_CACHE := $(CACHE)/windows
WIN_CC ?= x86_64-w64-mingw32-gcc
WIN_FAKES := $(WIN_CACHE)/fakes/computenetwork.dll $(WIN_CACHE)/fakes/vmcompute.dll $(WIN_CACHE)/fakes/fakeetw.dll
WIN_NODE_EXE := $(WIN_CACHE)/node-$(NODE_VERSION)/node.exe
WIN_PREFIX_STAMP := $(WIN_CACHE)/prefix/.win10

.PHONY: windows-prep test-windows
windows-prep: $(WIN_FAKES) $(WIN_NODE_EXE) $(WIN_PREFIX_STAMP)

$(WIN_CACHE)/fakes/%.dll: test/windows/fakes/%.c test/windows/fakes/fake.h mk/windows.mk | $(APT_STAMP)
	mkdir -p $(dir $@)
	$(WIN_CC) -O2 -Wall -Werror -shared -o $@.tmp.dll $< -lole32
	mv $@.tmp.dll $@

$(WIN_NODE_EXE) $(WIN_PREFIX_STAMP): hack/windows/setup-wine.sh | $(APT_STAMP) $(NODE_STAMP)
	bash hack/windows/setup-wine.sh $(NODE_VERSION)

# make test runs the Wine suite too (its runner test needs these).
test: windows-prep

test-windows: build windows-prep
	node --test --test-concurrency=1 --test-reporter=spec --test-timeout=600000 'dist/test/windows/*.test.js'
