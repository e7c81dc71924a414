// SPDX-License-Identifier: Apache-2.0
/* UDP load for the datapath benchmarks, built at bench time with the host's clang.
 *
 *   pktgen send SECONDS PPS SIZE DST_IP DST_PORT NETNS...
 *     opens one UDP socket in each named network namespace (setns, socket, setns back), then sends
 *     SIZE-byte datagrams to DST_IP:DST_PORT round-robin over the sockets at PPS packets/s in total
 *     for SECONDS, with sendmmsg batches paced every millisecond; prints "sent N".
 *   pktgen sink SECONDS PORT
 *     receives on 0.0.0.0:PORT (and [::]) with recvmmsg for SECONDS; prints "received N".
 *   pktgen connect SECONDS RATE DST_IP DST_PORT
 *     short TCP connections to DST_IP:DST_PORT, RATE new connections/s (0: as fast as one thread can),
 *     each one connect, read until the server's FIN, close (the server closes first, so TIME_WAIT
 *     stays on its side and the client's ports are free again); prints "connected N failed M".
 *   pktgen accept SECONDS PORT
 *     accepts on 0.0.0.0:PORT and closes every connection at once; prints "ready", then "accepted N". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int socket_in(const char *ns, int home)
{
	char path[256];
	snprintf(path, sizeof path, "/var/run/netns/%s", ns);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
		fprintf(stderr, "pktgen: cannot enter netns %s: %s\n", ns, strerror(errno));
		exit(1);
	}
	close(fd);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || setns(home, CLONE_NEWNET) != 0) {
		fprintf(stderr, "pktgen: socket in %s: %s\n", ns, strerror(errno));
		exit(1);
	}
	return s;
}

#define BATCH 64

static int send_mode(int argc, char **argv)
{
	if (argc < 8) return 2;
	double seconds = atof(argv[2]);
	long pps = atol(argv[3]);
	int size = atoi(argv[4]);
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[6])) };
	if (inet_pton(AF_INET, argv[5], &dst.sin_addr) != 1) return 2;
	int n = argc - 7;
	int *socks = calloc(n, sizeof(int));
	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	for (int i = 0; i < n; i++) socks[i] = socket_in(argv[7 + i], home);
	char *buf = calloc(1, size > 0 ? size : 1);
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct mmsghdr msgs[BATCH];
	for (int i = 0; i < BATCH; i++) {
		memset(&msgs[i], 0, sizeof msgs[i]);
		msgs[i].msg_hdr.msg_name = &dst;
		msgs[i].msg_hdr.msg_namelen = sizeof dst;
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	long sent = 0;
	int next = 0;
	double t0 = now();
	for (;;) {
		double t = now() - t0;
		if (t >= seconds) break;
		long due = (long)(t * pps) - sent;
		if (due <= 0) {
			struct timespec ms = { 0, 200000 };
			nanosleep(&ms, NULL);
			continue;
		}
		/* one datagram per socket in turn; sendmmsg on one socket per step keeps the rotation fair */
		while (due > 0) {
			int k = due < BATCH / 8 ? (int)due : BATCH / 8;
			int r = sendmmsg(socks[next], msgs, k, 0);
			if (r > 0) {
				sent += r;
				due -= r;
			} else if (errno != EAGAIN && errno != ENOBUFS) {
				fprintf(stderr, "pktgen: sendmmsg: %s\n", strerror(errno));
				return 1;
			} else {
				break;
			}
			next = (next + 1) % n;
		}
	}
	printf("sent %ld\n", sent);
	return 0;
}

static int sink_mode(int argc, char **argv)
{
	if (argc < 4) return 2;
	double seconds = atof(argv[2]);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	int big = 8 << 20;
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[3])), .sin_addr.s_addr = INADDR_ANY };
	if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
		fprintf(stderr, "pktgen: bind: %s\n", strerror(errno));
		return 1;
	}
	struct timeval tv = { 0, 100000 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	static char bufs[BATCH][2048];
	struct iovec iov[BATCH];
	struct mmsghdr msgs[BATCH];
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof bufs[i];
		memset(&msgs[i], 0, sizeof msgs[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	printf("ready\n");
	fflush(stdout);
	long got = 0;
	double t0 = now();
	while (now() - t0 < seconds) {
		int r = recvmmsg(s, msgs, BATCH, 0, NULL);
		if (r > 0) got += r;
	}
	printf("received %ld\n", got);
	return 0;
}

static int connect_mode(int argc, char **argv)
{
	if (argc < 6) return 2;
	double seconds = atof(argv[2]);
	long rate = atol(argv[3]);
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[5])) };
	if (inet_pton(AF_INET, argv[4], &dst.sin_addr) != 1) return 2;
	long done = 0, failed = 0;
	char buf[64];
	double t0 = now();
	for (;;) {
		double t = now() - t0;
		if (t >= seconds) break;
		if (rate > 0 && (long)(t * rate) <= done + failed) {
			struct timespec pause = { 0, 50000 };
			nanosleep(&pause, NULL);
			continue;
		}
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&dst, sizeof dst) != 0) {
			failed++;
		} else {
			while (read(s, buf, sizeof buf) > 0) {}
			done++;
		}
		if (s >= 0) close(s);
	}
	printf("connected %ld failed %ld\n", done, failed);
	return 0;
}

static int accept_mode(int argc, char **argv)
{
	if (argc < 4) return 2;
	double seconds = atof(argv[2]);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[3])), .sin_addr.s_addr = INADDR_ANY };
	if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 4096) != 0) {
		fprintf(stderr, "pktgen: bind/listen: %s\n", strerror(errno));
		return 1;
	}
	struct timeval tv = { 0, 100000 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	printf("ready\n");
	fflush(stdout);
	long got = 0;
	double t0 = now();
	while (now() - t0 < seconds) {
		int c = accept(s, NULL, NULL);
		if (c >= 0) {
			got++;
			close(c);
		}
	}
	printf("accepted %ld\n", got);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 2;
	if (argc > 1 && !strcmp(argv[1], "send")) rc = send_mode(argc, argv);
	else if (argc > 1 && !strcmp(argv[1], "sink")) rc = sink_mode(argc, argv);
	else if (argc > 1 && !strcmp(argv[1], "connect")) rc = connect_mode(argc, argv);
	else if (argc > 1 && !strcmp(argv[1], "accept")) rc = accept_mode(argc, argv);
	if (rc == 2) fprintf(stderr, "usage: pktgen send SECONDS PPS SIZE DST_IP DST_PORT NETNS... | pktgen sink SECONDS PORT | pktgen connect SECONDS RATE DST_IP DST_PORT | pktgen accept SECONDS PORT\n");
	return rc;
}
