// Writes frames into a TAP device made with IFF_NAPI | IFF_NAPI_FRAGS, each as two iovecs: the
// Ethernet header, then the rest. The tap puts the first iovec in the skb's linear part and the
// rest in page fragments, so tc ingress on the tap sees packets whose IP and L4 headers are not in
// the linear part: the packets packetparser must read with bpf_skb_load_bytes (parse_copied).
// With GRO off on the tap (the test turns it off), nothing pulls them in before tc.
//
// Usage: tapfrags <ifname>   creates the tap, prints "ready", then reads commands on stdin, one a
// line, and answers "ok" after each:
//   udp4 <n> <src> <dst> <sport> <dport> <payload bytes>
//   udp6 <n> <src> <dst> <sport> <dport> <payload bytes>
//   tcp4 <n> <src> <dst> <sport> <dport> <payload bytes> <tsval>   (ACK|PSH, NOP NOP timestamp)
// The tap lives while the program runs (stdin closed: it exits).
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

static uint16_t csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v & 0xff; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v & 0xffff); }

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: tapfrags <ifname>\n");
		return 2;
	}
	int fd = open("/dev/net/tun", O_RDWR);
	if (fd < 0) {
		perror("open /dev/net/tun");
		return 1;
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_NAPI | IFF_NAPI_FRAGS;
	strncpy(ifr.ifr_name, argv[1], IFNAMSIZ - 1);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		perror("TUNSETIFF (IFF_NAPI_FRAGS)");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);

	char line[512];
	while (fgets(line, sizeof(line), stdin)) {
		char kind[8], src[64], dst[64];
		unsigned n, sport, dport, size, tsval = 0;
		int got = sscanf(line, "%7s %u %63s %63s %u %u %u %u", kind, &n, src, dst, &sport, &dport, &size, &tsval);
		if (got < 7 || size > 1400) {
			fprintf(stderr, "bad command: %s", line);
			return 2;
		}
		int v6 = strcmp(kind, "udp6") == 0;
		int tcp = strcmp(kind, "tcp4") == 0;
		if (!v6 && !tcp && strcmp(kind, "udp4") != 0) {
			fprintf(stderr, "bad kind: %s\n", kind);
			return 2;
		}
		uint8_t eth[14] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1};
		put16(eth + 12, v6 ? 0x86dd : 0x0800);
		uint8_t rest[1600];
		memset(rest, 0, sizeof(rest));
		size_t l3 = v6 ? 40 : 20, l4 = tcp ? 32 : 8, len = l3 + l4 + size;
		if (v6) {
			rest[0] = 0x60;
			put16(rest + 4, (uint16_t)(l4 + size));
			rest[6] = 17;
			rest[7] = 64;
			if (inet_pton(AF_INET6, src, rest + 8) != 1 || inet_pton(AF_INET6, dst, rest + 24) != 1) {
				fprintf(stderr, "bad IPv6 address\n");
				return 2;
			}
		} else {
			rest[0] = 0x45;
			put16(rest + 2, (uint16_t)len);
			rest[8] = 64;
			rest[9] = tcp ? 6 : 17;
			if (inet_pton(AF_INET, src, rest + 12) != 1 || inet_pton(AF_INET, dst, rest + 16) != 1) {
				fprintf(stderr, "bad IPv4 address\n");
				return 2;
			}
			put16(rest + 10, csum(rest, 20));
		}
		uint8_t *h = rest + l3;
		put16(h, (uint16_t)sport);
		put16(h + 2, (uint16_t)dport);
		if (tcp) {
			put32(h + 4, 1000);
			put32(h + 8, 1);
			h[12] = 8 << 4; /* 32 bytes */
			h[13] = 0x18;   /* PSH, ACK */
			put16(h + 14, 65535);
			h[20] = 1;
			h[21] = 1;
			h[22] = 8;
			h[23] = 10;
			put32(h + 24, tsval);
			put32(h + 28, 0);
		} else {
			put16(h + 4, (uint16_t)(l4 + size));
		}
		memset(h + l4, 0x61, size);
		for (unsigned i = 0; i < n; i++) {
			struct iovec iov[2] = {{eth, sizeof(eth)}, {rest, len}};
			if (writev(fd, iov, 2) != (ssize_t)(sizeof(eth) + len)) {
				perror("writev");
				return 1;
			}
		}
		printf("ok\n");
		fflush(stdout);
	}
	return 0;
}
