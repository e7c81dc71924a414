# eBPF objects (native-linux/<name>/<name>.bpf.c -> native-linux/<name>/<name>.bpf.o), CO-RE with BTF.
# vmlinux.h is generated from this machine's kernel BTF into .cache/ (git-ignored); the objects
# relocate on any BTF kernel at load time, so nodes need no compiler. The agent finds the objects
# relative to the package root (bpfObjectPath in src/ffi/linux/object.ts).
BPF_CLANG ?= $(firstword $(shell command -v clang-14 clang 2>/dev/null))
BPFTOOL ?= $(firstword $(shell command -v bpftool /usr/sbin/bpftool 2>/dev/null))
BPF_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(shell uname -m)))
BPF_VMLINUX := $(CACHE)/bpf/vmlinux.h
BPF_NAMES := packetforward dropreason dns tcpretrans ringbench packetparser
BPF_OBJECTS := $(foreach n,$(BPF_NAMES),native-linux/$(n)/$(n).bpf.o)
BPF_HEADERS := $(wildcard native-linux/include/*.h)
BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -D__TARGET_ARCH_$(BPF_ARCH) \
	-I$(dir $(BPF_VMLINUX)) -Inative-linux/include -I/usr/include/$(shell uname -m)-linux-gnu

native: $(BPF_OBJECTS)

$(BPF_VMLINUX):
	@test -r /sys/kernel/btf/vmlinux || { echo "no kernel BTF at /sys/kernel/btf/vmlinux: cannot build the eBPF objects" >&2; exit 1; }
	mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

native-linux/%.bpf.o: native-linux/%.bpf.c $(BPF_HEADERS) $(BPF_VMLINUX) mk/ebpf.mk
	$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	mv $@.tmp $@

.PHONY: native-clean
native-clean:
	rm -f $(BPF_OBJECTS)
