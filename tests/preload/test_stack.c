/* The hooks borrow little of the program's stack: at most 512 bytes more than the untraced
 * call needs, in every stack mode (none, fp, unwind).  Each test runs gt-stack untraced and
 * traced (run_twins: same output, same exit status), compares what the program measured
 * about its own stack, and reads the facts back from the capture. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "traced_run.h"

#define BUDGET 512

static struct run plain, traced;
static struct capture cap;

static void teardown(void)
{
	capture_close(&cap);
	run_cleanup(&plain);
	run_cleanup(&traced);
}

static const uint64_t *P(const struct cap_rec *r) { return r->payload; }

/* the number after "key " on a line of text, -1 when absent */
static long stat_of(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return strtol(p + n + 1, NULL, 10);
	return -1;
}

/* gt-stack ARGS untraced and traced with GOTRACE_STACKS=mode (and extra, may be NULL) */
static void run_both(const char *mode, const char *a1, const char *a2, const char *extra)
{
	static char stacks[64];
	const char *target = test_program("gt-stack");
	snprintf(stacks, sizeof stacks, "GOTRACE_STACKS=%s", mode);
	const char *argv[] = {target, a1, a2, NULL};
	const char *env[] = {stacks, extra, NULL};
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s %s: %s", a1, mode, diff);
	cr_assert(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0, "%s: %s", a1, plain.err);
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(cap.bad_bytes, 0u);
}

/* The stack record of id: its frames and their number. */
static const uint64_t *stack_frames(uint32_t id, uint32_t *n)
{
	const struct cap_rec *r;
	for (size_t i = 0; (r = capture_find(&cap, GT_STACK, -1, i)); i++) {
		const struct gt_p_stack *s = r->payload;
		if (s->id == id) {
			*n = s->nframes;
			return (const uint64_t *)(s + 1);
		}
	}
	*n = 0;
	return NULL;
}

/* The fact's stack id (0 in mode none) names a stack with a frame in fn (a return address
 * at most 512 bytes past its entry). */
static void check_stack(const char *mode, const char *what, uint32_t id, uintptr_t fn)
{
	if (!strcmp(mode, "none")) {
		cr_expect_eq(id, 0u, "%s: a stack id without stacks", what);
		return;
	}
	cr_assert_neq(id, 0u, "%s: no stack (%s)", what, mode);
	uint32_t n;
	const uint64_t *f = stack_frames(id, &n);
	cr_assert_not_null(f, "%s: stack %u has no record", what, id);
	int found = 0;
	for (uint32_t i = 0; i < n; i++)
		found |= f[i] > fn && f[i] - fn < 512;
	cr_expect(found, "%s: the %s stack (%u frames, first %#lx) misses the program's frame at %#lx",
		  what, mode, n, n ? (unsigned long)f[0] : 0ul, (unsigned long)fn);
}

/* The first fact of type (and aux, -1: any) written by thread, or NULL; for SYSCALL_BEGIN,
 * the first on descriptor fd (-1: any). */
static const struct cap_rec *first_of(int type, int aux, uint32_t thread, long fd)
{
	for (size_t i = 0; i < cap.n; i++) {
		const struct cap_rec *r = &cap.recs[i];
		if (r->h->type == type && (aux < 0 || r->h->aux == aux) && r->h->thread == thread &&
		    (fd < 0 || (long)P(r)[1] == fd))
			return r;
	}
	return NULL;
}

/* ---- every kind of hook, at the same depth, in a painted stack --------------------------- */

static const char *const ops[] = {"mutex", "mutex-contended", "mutex-unlock-waited", "cond-wait",
				  "cond-signal", "sem-wait", "sem-post", "write", "nanosleep",
				  "pthread-create", "exec", "posix-spawn", "dlopen", "exit", "_exit"};

static void measure(const char *mode, const char *rounds, const char *extra)
{
	run_both(mode, "measure", rounds, extra);
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		char key[64];
		snprintf(key, sizeof key, "stackuse %s", ops[i]);
		long u = stat_of(plain.err, key), t = stat_of(traced.err, key);
		cr_assert(u >= 0 && t >= 0, "%s not measured: %s", ops[i], traced.err);
		cr_log_info("stacks=%s %s: %ld bytes untraced, %ld traced (%+ld)", mode, ops[i], u, t, t - u);
		cr_expect_leq(t - u, BUDGET, "stacks=%s %s: %ld bytes untraced, %ld traced", mode, ops[i], u, t);
	}
	/* the measurer is the second thread main creates (the helper is the first) */
	const struct cap_rec *nw = capture_find(&cap, GT_THREAD_NEW, -1, 1);
	cr_assert_not_null(nw);
	uint32_t m = ((const struct gt_p_thread_new *)nw->payload)->child;
	uintptr_t at = (uintptr_t)stat_of(traced.err, "fn painted_run");
	static const struct {
		int type, aux;
		const char *what;
	} facts[] = {
		{GT_BLOCK_BEGIN, GT_BK_MUTEX, "contended lock"}, {GT_BLOCK_BEGIN, GT_BK_COND, "cond wait"},
		{GT_BLOCK_BEGIN, GT_BK_SEM, "sem wait"},         {GT_BLOCK_BEGIN, GT_BK_SLEEP, "nanosleep"},
		{GT_WAKE, GT_BK_MUTEX, "unlock"},                {GT_WAKE, GT_BK_COND, "cond signal"},
		{GT_WAKE, GT_BK_SEM, "sem post"},                {GT_SYSCALL_BEGIN, -1, "write"},
		{GT_THREAD_NEW, -1, "pthread_create"},
	};
	for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++) {
		long fd = facts[i].type == GT_SYSCALL_BEGIN ? stat_of(traced.err, "fd devnull") : -1;
		const struct cap_rec *r = first_of(facts[i].type, facts[i].aux, m, fd);
		cr_assert_not_null(r, "no %s fact from the measuring thread %u", facts[i].what, m);
		/* blocks and wakes: after the object; thread_new and syscall: after a 32-bit word */
		uint32_t id = facts[i].type == GT_BLOCK_BEGIN || facts[i].type == GT_WAKE ?
				      (uint32_t)P(r)[1] : (uint32_t)(P(r)[0] >> 32);
		check_stack(mode, facts[i].what, id, at);
	}
}

Test(stack, measure_none, .fini = teardown, .timeout = 60) { measure("none", "4", NULL); }
Test(stack, measure_fp, .fini = teardown, .timeout = 60) { measure("fp", "4", NULL); }
Test(stack, measure_unwind, .fini = teardown, .timeout = 60) { measure("unwind", "4", NULL); }

/* 16 KiB chunks: new chunks (the reservation's slow path) inside the measured calls */
Test(stack, measure_unwind_chunk_churn, .fini = teardown, .timeout = 60)
{
	measure("unwind", "100", "GOTRACE_CHUNK_SIZE=16384");
}

/* GOTRACE_OUT: exit() in each fork child of "exit" runs the converter too */
Test(stack, measure_unwind_exit_convert, .fini = teardown, .timeout = 120)
{
	char dir[] = "/tmp/gt-stack-out-XXXXXX", out[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(out, sizeof out, "GOTRACE_OUT=%s/t-%%p.trace", dir);
	measure("unwind", "4", out);
	DIR *d = opendir(dir);
	struct dirent *e;
	int traces = 0;
	char path[sizeof dir + 300];
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		traces++;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
	/* the 4 exit() children's, and the program's (its own exit comes after the measures) */
	cr_expect_eq(traces, 5, "%d traces written", traces);
}

/* ---- signal handlers on a malloc'd 8 KiB alternate stack ---------------------------------- */

static void altstack(const char *mode, const char *scenario, const char *extra)
{
	run_both(mode, scenario, NULL, extra);
	cr_assert(strstr(plain.out, "untouched") && strstr(plain.out, "intact"), "%s", plain.out);
	long u = stat_of(plain.err, "altstack"), t = stat_of(traced.err, "altstack");
	cr_assert(u > 0 && t > 0);
	cr_log_info("%s stacks=%s: alternate stack %ld bytes deep untraced, %ld traced", scenario, mode, u, t);
	/* one handler at a time on the 8 KiB stack; nested ones have room, and are not measured */
	if (!strcmp(scenario, "altstack"))
		cr_expect_leq(t - u, BUDGET, "stacks=%s: alternate stack %ld bytes deep untraced, %ld traced",
			      mode, u, t);
	/* the handler's facts: its nanosleep (1000 ns) and its contended lock, on the main thread */
	uintptr_t handler = (uintptr_t)stat_of(traced.err, "fn handler");
	size_t sleeps = 0, locks = 0;
	for (size_t i = 0; i < cap.n; i++) {
		const struct cap_rec *r = &cap.recs[i];
		if (r->h->type != GT_BLOCK_BEGIN || r->h->thread != 1)
			continue;
		if (r->h->aux == GT_BK_SLEEP && P(r)[0] == 1000 && !sleeps++)
			check_stack(mode, "the handler's nanosleep", (uint32_t)P(r)[1], handler);
		if (r->h->aux == GT_BK_MUTEX && !locks++)
			check_stack(mode, "the handler's lock", (uint32_t)P(r)[1], handler);
	}
	cr_log_info("%s stacks=%s: %zu sleeps, %zu contended locks recorded in handlers", scenario, mode,
		    sleeps, locks);
	cr_expect_gt(sleeps, 0u, "no nanosleep recorded in the handler");
	cr_expect_gt(locks, 0u, "no contended lock recorded in the handler");
}

Test(stack, altstack_none, .fini = teardown, .timeout = 60) { altstack("none", "altstack", NULL); }
Test(stack, altstack_fp, .fini = teardown, .timeout = 60) { altstack("fp", "altstack", NULL); }
Test(stack, altstack_unwind, .fini = teardown, .timeout = 60) { altstack("unwind", "altstack", NULL); }

/* A timer's signals landing in handlers on the same alternate stack, often while the tracer
 * works for them: the tracer must not leave the alternate stack while a nested signal could
 * be put at its top */
Test(stack, altstack_nested_unwind, .fini = teardown, .timeout = 60)
{
	altstack("unwind", "altnest", NULL);
}
Test(stack, altstack_nested_fp, .fini = teardown, .timeout = 60)
{
	altstack("fp", "altnest", NULL);
}

/* ---- a thread with a 16 KiB stack recursing until its guard page -------------------------- */

static void recurse(const char *mode)
{
	run_both(mode, "recurse", NULL, NULL);
	long uf = -1, ud = -1, tf = -1, td = -1;
	const char *u = strstr(plain.err, "recurse "), *t = strstr(traced.err, "recurse ");
	cr_assert(u && t && sscanf(u, "recurse %ld %ld", &uf, &ud) == 2 &&
		  sscanf(t, "recurse %ld %ld", &tf, &td) == 2, "%s", traced.err);
	cr_assert_eq(uf, tf, "the frames differ");
	cr_log_info("stacks=%s: %ld levels of %ld bytes untraced, %ld traced", mode, ud, uf, td);
	cr_expect_leq((ud - td) * uf, BUDGET, "stacks=%s: %ld levels of %ld bytes untraced, %ld traced",
		      mode, ud, uf, td);
	/* the recursing thread (main's first) wrote at every level but perhaps the last */
	const struct cap_rec *nw = capture_find(&cap, GT_THREAD_NEW, -1, 0);
	cr_assert_not_null(nw);
	uint32_t th = ((const struct gt_p_thread_new *)nw->payload)->child;
	size_t writes = 0;
	for (size_t i = 0; i < cap.n; i++)
		writes += cap.recs[i].h->type == GT_SYSCALL_BEGIN && cap.recs[i].h->thread == th &&
			  (uint32_t)P(&cap.recs[i])[0] == SYS_write;
	cr_expect_geq((long)writes, td - 2, "%zu writes recorded, %ld levels", writes, td);
	const struct cap_rec *w = first_of(GT_SYSCALL_BEGIN, -1, th, -1);
	cr_assert_not_null(w);
	check_stack(mode, "a write", (uint32_t)(P(w)[0] >> 32), (uintptr_t)stat_of(traced.err, "fn descend"));
}

Test(stack, recurse_16k_none, .fini = teardown, .timeout = 60) { recurse("none"); }
Test(stack, recurse_16k_fp, .fini = teardown, .timeout = 60) { recurse("fp"); }
Test(stack, recurse_16k_unwind, .fini = teardown, .timeout = 60) { recurse("unwind"); }
