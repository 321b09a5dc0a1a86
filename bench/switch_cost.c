/* switch_cost: what gotrace's kernel records add to a context switch, without the hooks.
 *
 *   switch_cost [ROUND_TRIPS [REPS]]    (defaults 100000 and 5)
 *
 * A traced process passes a byte back and forth through two pipes with an untraced one, both
 * pinned to CPU 0, so each round trip is one switch in and one switch out of the traced
 * process, to and from a process whose events the kernel does not share (a server and its
 * clients, its idle CPU).  The traced process reports its own CPU time per round trip:
 * untraced, with the recorder of `gotrace run --kernel=on --cpu-samples off` (kernel/recorder.c,
 * the same events, rings and drain) and with `--kernel=on` (99 Hz CPU samples too).  The
 * configurations run in turn within each repetition; medians are printed.  CPU time, not wall
 * time: the other programs of a shared machine move it less.  Needs perf events (root, or
 * perf_event_paranoid <= 2). */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/recorder.h"

#define MAX_REPS 99

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void pin_to_cpu0(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof set, &set))
		die("switch_cost: sched_setaffinity");
}

static void one_byte(int fd, char *c, int writing)
{
	if ((writing ? write(fd, c, 1) : read(fd, c, 1)) != 1)
		die(writing ? "switch_cost: write" : "switch_cost: read");
}

/* The traced side, after its exec: ROUND_TRIPS through fds 3 (to the peer) and 4 (from it),
 * then its CPU nanoseconds per round trip on fd 5. */
static int traced_side(long rounds)
{
	pin_to_cpu0();
	char c = 0;
	for (long i = 0; i < rounds; i++) {
		one_byte(3, &c, 1);
		one_byte(4, &c, 0);
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double ns = ((double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
		     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3) / (double)rounds;
	if (write(5, &ns, sizeof ns) != (ssize_t)sizeof ns)
		die("switch_cost: write result");
	return 0;
}

/* One configuration: hz < 0 untraced, else the recorder with hz CPU samples per second. */
static double measure(const char *self, long rounds, int hz, const char *dir)
{
	int to_peer[2], from_peer[2], result[2], go[2];
	if (pipe(to_peer) || pipe(from_peer) || pipe(result) || pipe2(go, O_CLOEXEC))
		die("switch_cost: pipe");
	pid_t peer = fork();
	if (peer == 0) {
		pin_to_cpu0();
		char c;
		for (long i = 0; i < rounds; i++) {
			one_byte(to_peer[0], &c, 0);
			one_byte(from_peer[1], &c, 1);
		}
		_exit(0);
	}
	pid_t traced = fork();
	if (traced == 0) {
		char c, arg[32];
		/* above 5 first, so that placing one cannot close another */
		int out = fcntl(to_peer[1], F_DUPFD, 10), in = fcntl(from_peer[0], F_DUPFD, 10),
		    res = fcntl(result[1], F_DUPFD, 10);
		if (out < 0 || in < 0 || res < 0 || dup2(out, 3) < 0 || dup2(in, 4) < 0 ||
		    dup2(res, 5) < 0)
			die("switch_cost: dup2");
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		snprintf(arg, sizeof arg, "%ld", rounds);
		execl(self, self, "--traced-side", arg, (char *)NULL);
		die("switch_cost: exec");
	}
	close(go[0]);
	struct gt_kernel_options opt = { .sample_hz = hz > 0 ? (unsigned)hz : 0 };
	struct gt_kernel_rec *k = hz < 0 ? NULL : gt_kernel_start(traced, dir, &opt);
	if (hz >= 0 && k == NULL)
		exit(1);  /* gt_kernel_start said why */
	if (write(go[1], "x", 1) != 1)
		die("switch_cost: write go");
	double ns = 0;
	if (read(result[0], &ns, sizeof ns) != (ssize_t)sizeof ns)
		die("switch_cost: read result");
	waitpid(traced, NULL, 0);
	waitpid(peer, NULL, 0);
	if (k != NULL) {
		gt_kernel_finish(k);
		char path[600];
		snprintf(path, sizeof path, "%s/gotrace-%d.gtkern", dir, (int)traced);
		unlink(path);
	}
	int fds[] = { to_peer[0], to_peer[1], from_peer[0], from_peer[1], result[0], result[1],
		      go[1] };
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		close(fds[i]);
	return ns;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--traced-side"))
		return traced_side(atol(argv[2]));
	long rounds = argc >= 2 ? atol(argv[1]) : 100000;
	int reps = argc >= 3 ? atoi(argv[2]) : 5;
	if (argc > 3 || rounds < 1 || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "usage: switch_cost [ROUND_TRIPS [REPS (1-%d)]]\n", MAX_REPS);
		return 2;
	}
	char dir[] = "/tmp/switch_cost.XXXXXX";
	if (mkdtemp(dir) == NULL)
		die("switch_cost: mkdtemp");
	static const struct {
		const char *name;
		int hz;
	} configs[] = {
		{ "untraced", -1 },
		{ "switch records (--kernel=on --cpu-samples off)", 0 },
		{ "switch records and 99 Hz CPU samples (--kernel=on)", 99 },
	};
	enum { N = sizeof configs / sizeof configs[0] };
	double ns[N][MAX_REPS];
	for (int r = 0; r < reps; r++)
		for (int c = 0; c < N; c++)
			ns[c][r] = measure("/proc/self/exe", rounds, configs[c].hz, dir);
	rmdir(dir);
	double base = median(ns[0], reps);
	printf("CPU per round trip of the traced process (one switch in, one out), median of %d:\n",
	       reps);
	for (int c = 0; c < N; c++) {
		double m = median(ns[c], reps);
		printf("  %-52s %6.0f ns", configs[c].name, m);
		if (c > 0)
			printf("  (+%.0f ns)", m - base);
		putchar('\n');
	}
	return 0;
}
