// SPDX-License-Identifier: Apache-2.0
/* A storm of short TCP connections, for the CPU budget's bench and test; built with the host's clang.
 *
 *   storm server IP PORT SECONDS
 *     listens on IP:PORT; each connection it accepts gets one byte, then the server closes it (so the
 *     TIME_WAIT is the server's and the client's ports are free again at once). Prints "ready" when
 *     it listens and "accepted N" at the end.
 *   storm client IP PORT SECONDS CONCURRENCY [RATE]
 *     keeps CONCURRENCY non-blocking connections in flight to IP:PORT: connect, read the byte and the
 *     end, close; a new one starts as each ends (RATE > 0: at most RATE new connections per second,
 *     paced every millisecond). Prints "connections N failed M seconds S" at the end.
 * One thread each, epoll. Run them in two network namespaces (ip netns exec). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct sockaddr_in addr_of(const char *ip, const char *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(port))};
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		fprintf(stderr, "storm: bad address %s\n", ip);
		exit(2);
	}
	return a;
}

static int server(const char *ip, const char *port, double seconds)
{
	struct sockaddr_in a = addr_of(ip, port);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4096)) {
		fprintf(stderr, "storm server: %s\n", strerror(errno));
		return 1;
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = l};
	epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
	printf("ready\n");
	fflush(stdout);
	long accepted = 0;
	double end = now() + seconds;
	while (now() < end) {
		struct epoll_event got[16];
		int n = epoll_wait(ep, got, 16, 100);
		for (int i = 0; i < n; i++) {
			for (;;) {
				int c = accept4(l, NULL, NULL, SOCK_NONBLOCK);
				if (c < 0)
					break;
				(void)!write(c, "x", 1);
				close(c);
				accepted++;
			}
		}
	}
	printf("accepted %ld\n", accepted);
	return 0;
}

static int first_err; /* the first failure's errno, for the summary line */

static int start(int ep, const struct sockaddr_in *a)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (s < 0) {
		first_err = first_err ? first_err : errno;
		return -1;
	}
	if (connect(s, (const struct sockaddr *)a, sizeof *a) && errno != EINPROGRESS) {
		first_err = first_err ? first_err : errno;
		close(s);
		return -1;
	}
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = s};
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	return s;
}

static int client(const char *ip, const char *port, double seconds, int concurrency, double rate)
{
	struct sockaddr_in a = addr_of(ip, port);
	int ep = epoll_create1(0);
	long done = 0, failed = 0, started = 0;
	int inflight = 0;
	double t0 = now(), end = t0 + seconds;
	while (now() < end) {
		double allowed = rate > 0 ? (now() - t0) * rate : 1e18;
		while (inflight < concurrency && started < allowed) {
			if (start(ep, &a) < 0) {
				failed++;
				break;
			}
			inflight++;
			started++;
		}
		struct epoll_event got[64];
		int n = epoll_wait(ep, got, 64, 1);
		for (int i = 0; i < n; i++) {
			int s = got[i].data.fd;
			char buf[16];
			ssize_t r;
			while ((r = read(s, buf, sizeof buf)) > 0)
				;
			int rerr = r < 0 ? errno : 0;
			if (rerr == EAGAIN && !(got[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
				continue; /* the byte came, the end not yet */
			if ((got[i].events & EPOLLERR) || (rerr && rerr != EAGAIN)) {
				int err = 0;
				socklen_t len = sizeof err;
				getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
				err = err ? err : rerr; /* a read that failed took the socket's error */
				first_err = first_err ? first_err : err;
				failed++;
			} else
				done++;
			close(s);
			inflight--;
		}
	}
	printf("connections %ld failed %ld seconds %.3f%s%s\n", done, failed, now() - t0, first_err ? " first error: " : "", first_err ? strerror(first_err) : "");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], atof(argv[4]));
	if (argc >= 6 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], atof(argv[4]), atoi(argv[5]), argc > 6 ? atof(argv[6]) : 0);
	fprintf(stderr, "usage: storm server IP PORT SECONDS | storm client IP PORT SECONDS CONCURRENCY [RATE]\n");
	return 2;
}
