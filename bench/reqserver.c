/* reqserver: a loopback request/response server and its load, for scripts/bench.
 *
 *   reqserver serve CONNS [LOOPS]       listens on 127.0.0.1 (a free port, printed first as
 *                                       "port N"), accepts CONNS connections and serves them
 *                                       from LOOPS epoll event loops (default 1, as redis;
 *                                       several, as memcached) until every one is closed
 *   reqserver load PORT CONNS REQUESTS  CONNS connections from one epoll thread (as
 *                                       redis-benchmark), one request in flight on each,
 *                                       REQUESTS in all; prints the requests per second
 *
 * A request is 32 bytes, its response 64 bytes computed from it, so both sides print a sum
 * of what they saw and a traced server whose answers differ is seen; the server prints its
 * CPU time too.  Only the server is
 * meant to be traced: the load is the server's clients, another program. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REQ_BYTES 32
#define RESP_BYTES 64
#define MAX_CONNS 1024
#define MAX_LOOPS 64

static void die(const char *what)
{
	fprintf(stderr, "reqserver: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Reads or writes exactly len bytes of a blocking socket; false at end of stream. */
static int full_io(int fd, void *buf, size_t len, int writing)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die(writing ? "write" : "read");
		if (n == 0)
			return 0;
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

/* The response to a request: a little work, as a server parses and looks a key up. */
static void answer(const unsigned char *req, uint64_t *resp)
{
	uint64_t x = 1469598103934665603ULL;
	for (int round = 0; round < 8; round++)
		for (int i = 0; i < REQ_BYTES; i++)
			x = (x ^ req[i]) * 1099511628211ULL;
	for (int i = 0; i < RESP_BYTES / 8; i++)
		resp[i] = x + (uint64_t)i;
}

static void no_delay(int fd)
{
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one))
		die("setsockopt TCP_NODELAY");
}

/* ---- the server --------------------------------------------------------------------------- */

struct loop {
	int epfd;
	int conns;              /* connections handed to this loop */
	pthread_t thread;
	unsigned long served;
	uint64_t sum;
};

static void *serve_loop(void *arg)
{
	struct loop *l = arg;
	struct epoll_event ev[64];
	int open_conns = l->conns;
	while (open_conns > 0) {
		int n = epoll_wait(l->epfd, ev, 64, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			int fd = ev[i].data.fd;
			unsigned char req[REQ_BYTES];
			uint64_t resp[RESP_BYTES / 8];
			if (!full_io(fd, req, sizeof req, 0)) {
				close(fd);  /* leaves the epoll set with its last descriptor */
				open_conns--;
				continue;
			}
			answer(req, resp);
			l->sum += resp[0];
			l->served++;
			full_io(fd, resp, sizeof resp, 1);
		}
	}
	return NULL;
}

static int serve(int conns, int loops)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof addr;
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) ||
	    listen(lfd, MAX_CONNS) || getsockname(lfd, (struct sockaddr *)&addr, &alen))
		die("listen");
	printf("port %d\n", ntohs(addr.sin_port));
	fflush(stdout);
	static struct loop l[MAX_LOOPS];
	for (int i = 0; i < loops; i++) {
		l[i].conns = conns / loops + (i < conns % loops);
		if ((l[i].epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
			die("epoll_create1");
	}
	for (int c = 0; c < conns; c++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			die("accept");
		no_delay(fd);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
		if (epoll_ctl(l[c % loops].epfd, EPOLL_CTL_ADD, fd, &ev))
			die("epoll_ctl");
	}
	close(lfd);
	/* every connection is in a loop's set before the loops start: a loop ends when its
	 * own connections are closed */
	for (int i = 0; i < loops; i++) {
		errno = pthread_create(&l[i].thread, NULL, serve_loop, &l[i]);
		if (errno)
			die("pthread_create");
	}
	unsigned long served = 0;
	uint64_t sum = 0;
	for (int i = 0; i < loops; i++) {
		pthread_join(l[i].thread, NULL);
		served += l[i].served;
		sum += l[i].sum;
	}
	/* the server's own CPU time: a cost that the other programs of a shared machine do
	 * not move as much as they move the requests per second */
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	printf("served %lu requests on %d connections, sum %016llx, CPU %.6f s\n", served, conns,
	       (unsigned long long)sum, cpu);
	return 0;
}

/* ---- the load ----------------------------------------------------------------------------- */

static void make_request(unsigned long seq, unsigned char *req)
{
	for (int i = 0; i < REQ_BYTES; i++)
		req[i] = (unsigned char)(seq >> (8 * (i % 8))) ^ (unsigned char)i;
}

static int load(int port, int conns, unsigned long requests)
{
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	static int fds[MAX_CONNS];
	unsigned long sent = 0, answered = 0;
	uint64_t sum = 0;
	if (epfd < 0)
		die("epoll_create1");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int c = 0; c < conns; c++) {
		struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		fds[c] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[c] < 0 || connect(fds[c], (struct sockaddr *)&addr, sizeof addr))
			die("connect");
		no_delay(fds[c]);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[c] };
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fds[c], &ev))
			die("epoll_ctl");
	}
	for (int c = 0; c < conns && sent < requests; c++) {
		unsigned char req[REQ_BYTES];
		make_request(sent++, req);
		full_io(fds[c], req, sizeof req, 1);
	}
	while (answered < sent) {
		struct epoll_event ev[64];
		int n = epoll_wait(epfd, ev, 64, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			uint64_t resp[RESP_BYTES / 8];
			if (!full_io(ev[i].data.fd, resp, sizeof resp, 0)) {
				fprintf(stderr, "reqserver: the server closed a connection\n");
				return 1;
			}
			sum += resp[0];
			answered++;
			if (sent < requests) {
				unsigned char req[REQ_BYTES];
				make_request(sent++, req);
				full_io(ev[i].data.fd, req, sizeof req, 1);
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int c = 0; c < conns; c++)
		close(fds[c]);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%lu requests on %d connections in %.3f s: %.0f requests/s, sum %016llx\n",
	       answered, conns, secs, (double)answered / secs, (unsigned long long)sum);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && argc <= 4 && !strcmp(argv[1], "serve")) {
		int conns = atoi(argv[2]), loops = argc == 4 ? atoi(argv[3]) : 1;
		if (conns >= 1 && conns <= MAX_CONNS && loops >= 1 && loops <= MAX_LOOPS)
			return serve(conns, loops);
	} else if (argc == 5 && !strcmp(argv[1], "load")) {
		int port = atoi(argv[2]), conns = atoi(argv[3]);
		long requests = atol(argv[4]);
		if (port > 0 && port < 65536 && conns >= 1 && conns <= MAX_CONNS && requests >= 1)
			return load(port, conns, (unsigned long)requests);
	}
	fprintf(stderr, "usage: reqserver serve CONNS [LOOPS]     (CONNS 1-%d, LOOPS 1-%d)\n"
			"       reqserver load PORT CONNS REQUESTS\n", MAX_CONNS, MAX_LOOPS);
	return 2;
}
