/* oracle_v2: see oracle_v2.h. */
#include "oracle_v2.h"

#include "common/varint.h"
#include "encoder/encoder.h"

#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

bool gt_go_trace_tool(const char *version, char *path, size_t size)
{
	char var[32], go[PATH_MAX];
	size_t k = (size_t)snprintf(var, sizeof var, "GT_GO");
	for (const char *v = version; *v && k + 1 < sizeof var; v++)
		if (*v != '.')
			var[k++] = *v;
	var[k] = 0;
	const char *env = getenv(var);
	/* where scripts/lib/go-toolchains looks: GT_GO1NN, Debian's, then $GT_GO_ROOT's
	 * unpacked release (Go 1.26) */
	const char *root = getenv("GT_GO_ROOT");
	if (env && *env && strchr(env, '/'))
		snprintf(go, sizeof go, "%s", env);
	else
		snprintf(go, sizeof go, "/usr/lib/go-%s/bin/go", version);
	char real[PATH_MAX];
	if (!realpath(go, real) && !(env && *env)) {
		snprintf(go, sizeof go, "%s/%s/usr/lib/go-%s/bin/go",
			 root && *root ? root : "/opt/gotrace-go", version, version);
		if (!realpath(go, real))
			return false;
	} else if (!realpath(go, real)) {
		return false;
	}
	/* GOROOT/bin/go -> GOROOT/pkg/tool/<os>_<arch>/trace */
	char pattern[PATH_MAX + 32];
	snprintf(pattern, sizeof pattern, "%s/../pkg/tool/*/trace", dirname(real));
	glob_t g;
	if (glob(pattern, 0, NULL, &g) != 0)
		return false;
	bool found = g.gl_pathc > 0;
	if (found)
		snprintf(path, size, "%s", g.gl_pathv[0]);
	globfree(&g);
	return found;
}

static char *slurp_fd(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return NULL;
	char *s = malloc((size_t)st.st_size + 1);
	if (!s)
		return NULL;
	ssize_t n = pread(fd, s, (size_t)st.st_size, 0);
	s[n > 0 ? n : 0] = 0;
	return s;
}

int gt_dump_v2(const char *trace, const char *version, char **dump, char **err)
{
	char tool[PATH_MAX];
	*dump = NULL;
	if (err)
		*err = NULL;
	if (!gt_go_trace_tool(version, tool, sizeof tool)) {
		fprintf(stderr, "gt_dump_v2: Go %s is not installed\n", version);
		return -1;
	}
	bool parsed = strcmp(version, "1.24") >= 0 && strlen(version) >= 4;
	const char *argv[] = {tool, parsed ? "-d=parsed" : "-d=1", trace, NULL};
	char out_path[] = "/tmp/gt-dump-v2-XXXXXX", err_path[] = "/tmp/gt-dump-v2e-XXXXXX";
	int out = mkstemp(out_path), errfd = err ? mkstemp(err_path) : -1;
	if (out < 0 || (err && errfd < 0))
		return -1;
	unlink(out_path);
	if (err)
		unlink(err_path);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	if (err)
		posix_spawn_file_actions_adddup2(&fa, errfd, 2);
	/* the tool alone, never a toolchain download */
	setenv("GOTOOLCHAIN", "local", 1);
	setenv("GOPROXY", "off", 1);
	pid_t pid;
	int st = -1;
	if (posix_spawn(&pid, tool, &fa, NULL, (char *const *)argv, environ) == 0 &&
	    waitpid(pid, &st, 0) == pid)
		st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	posix_spawn_file_actions_destroy(&fa);
	*dump = slurp_fd(out);
	close(out);
	if (err) {
		*err = slurp_fd(errfd);
		close(errfd);
	}
	return st;
}

size_t gt_dump_v2_events(const char *dump)
{
	size_t n = 0;
	for (const char *l = dump; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "")
		n += !strncmp(l, "M=", 2);
	return n;
}

static bool uvarint(FILE *f, uint64_t *v)
{
	uint64_t x = 0;
	for (int i = 0; i < 10; i++) {
		int c = fgetc(f);
		if (c == EOF)
			return false;
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

ssize_t gt_trace_v2_generations(const char *trace, uint64_t *offsets, size_t cap, uint64_t *end)
{
	FILE *f = fopen(trace, "rb");
	if (!f)
		return -1;
	char header[16];
	ssize_t n = -1;
	*end = 0;
	if (fread(header, 1, 16, f) == 16 && !memcmp(header, "go 1.22 trace\0\0\0", 16)) {
		n = 0;
		uint64_t last = 0;
		*end = 16;
		for (;;) {
			long at = ftell(f);
			uint64_t gen, m, base, size;
			if (fgetc(f) != 1 || !uvarint(f, &gen) || !uvarint(f, &m) || !uvarint(f, &base) ||
			    !uvarint(f, &size) || fseek(f, (long)size, SEEK_CUR) != 0)
				break;
			struct stat st;
			if (fstat(fileno(f), &st) != 0 || ftell(f) > st.st_size)
				break;
			if (gen < last) {
				n = -1;
				break;
			}
			if (gen > last) {
				if ((size_t)n < cap)
					offsets[n] = (uint64_t)at;
				n++;
				last = gen;
			}
			*end = (uint64_t)ftell(f);
		}
	}
	fclose(f);
	return n;
}

uint64_t gt_trace_v2_batch_end(const char *trace, uint64_t offset)
{
	FILE *f = fopen(trace, "rb");
	if (!f)
		return 0;
	uint64_t gen, m, base, size, end = 0;
	struct stat st;
	if (fseek(f, (long)offset, SEEK_SET) == 0 && fgetc(f) == 1 && uvarint(f, &gen) &&
	    uvarint(f, &m) && uvarint(f, &base) && uvarint(f, &size) && fstat(fileno(f), &st) == 0 &&
	    (uint64_t)ftell(f) + size <= (uint64_t)st.st_size)
		end = (uint64_t)ftell(f) + size;
	fclose(f);
	return end;
}

/* ---- gt_trace_v2_order_check ------------------------------------------------------------- */

enum { EV_PROC_START = 10, EV_PROC_STOP, EV_PROC_STEAL, EV_PROC_STATUS, EV_GO_CREATE,
       EV_GO_CREATE_SYSCALL, EV_GO_START, EV_GO_DESTROY, EV_GO_DESTROY_SYSCALL, EV_GO_STOP,
       EV_GO_BLOCK, EV_GO_UNBLOCK, EV_GO_SYSCALL_BEGIN, EV_GO_SYSCALL_END,
       EV_GO_SYSCALL_END_BLOCKED, EV_GO_STATUS };
/* Arguments after the time delta of each timed event type of the 1.22 set (-1: not one). */
static const int8_t v2_nargs[45] = {
	-1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 2, 0, 3, 2, 3, 1, 2, 0, 0, 2, 2, 3, 2, 0, 0, 3,
	2, 0, 1, 2, 1, 1, 1, 2, 1, 1, 0, 1, 1, 1, 4, 2, 3, 3, 4};
/* States as order.go numbers them: G 1 Runnable 2 Running 3 Syscall 4 Waiting (0 none,
 * 5 gone); P 1 Running 2 Idle 3 Syscall (0 unknown). */
enum { OG_RUNNABLE = 1, OG_RUNNING, OG_SYSCALL, OG_WAITING, OG_GONE };
enum { OP_RUNNING = 1, OP_IDLE, OP_SYSCALL };
#define NONE UINT64_MAX

struct oc_ev {
	int64_t t;
	uint8_t type;
	uint64_t a[4];
};
struct oc_res {           /* a G or a P */
	uint8_t st;
	uint64_t seq, gen;
};
struct oc_m {
	uint64_t id, p, g;
};
struct oc_batch {
	uint64_t m, base;
	const uint8_t *data;
	size_t len, order;
};
struct oc_cursor {
	uint64_t m;
	size_t at, end;
};
struct order_check {
	struct oc_res *gs, *ps;
	size_t n_gs, n_ps;
	struct oc_m *ms;          /* open addressing by id, never removed */
	size_t n_ms, cap_ms;
	struct oc_ev *evs;
	size_t n_evs, cap_evs;
	char *why;
};

static struct oc_res *oc_res(struct oc_res **v, size_t *n, uint64_t id)
{
	if (id >= (1ull << 32))
		return NULL;
	if (id >= *n) {
		size_t k = (id + 1) * 2;
		struct oc_res *g = realloc(*v, k * sizeof *g);
		if (!g)
			return NULL;
		memset(g + *n, 0, (k - *n) * sizeof *g);
		*v = g;
		*n = k;
	}
	return &(*v)[id];
}

static struct oc_m *oc_m(struct order_check *c, uint64_t id)
{
	for (;;) {
		for (size_t i = c->cap_ms ? id * 0x9e3779b97f4a7c15ull % c->cap_ms : 0;
		     c->cap_ms; i = (i + 1) % c->cap_ms) {
			if (c->ms[i].id == id)
				return &c->ms[i];
			if (c->ms[i].id == 0) {   /* M ids are never 0 in a gotrace trace */
				if (c->n_ms * 2 < c->cap_ms) {
					c->n_ms++;
					c->ms[i] = (struct oc_m){id, NONE, 0};
					return &c->ms[i];
				}
				break;
			}
		}
		/* grow and rehash */
		size_t old = c->cap_ms, cap = old ? old * 2 : 1024;
		struct oc_m *ms = calloc(cap, sizeof *ms), *prev = c->ms;
		if (!ms)
			return NULL;
		c->ms = ms;
		c->cap_ms = cap;
		for (size_t j = 0; j < old; j++)
			if (prev[j].id) {
				size_t i = prev[j].id * 0x9e3779b97f4a7c15ull % cap;
				while (ms[i].id)
					i = (i + 1) % cap;
				ms[i] = prev[j];
			}
		free(prev);
	}
}

static int by_m_then_order(const void *a, const void *b)
{
	const struct oc_batch *x = a, *y = b;
	if (x->m != y->m)
		return x->m < y->m ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Whether ev can be taken now by M m (order.go's "advance" rather than "wait"). */
static bool oc_ready(struct order_check *c, const struct oc_m *m, const struct oc_ev *e,
		     uint64_t gen)
{
	struct oc_res *r;
	switch (e->type) {
	case EV_PROC_START:
		r = oc_res(&c->ps, &c->n_ps, e->a[0]);
		return r && r->st == OP_IDLE && r->gen == gen && e->a[1] == r->seq + 1 && m->p == NONE;
	case EV_PROC_STEAL:
		r = oc_res(&c->ps, &c->n_ps, e->a[0]);
		return r && r->st == OP_SYSCALL && r->gen == gen && e->a[1] == r->seq + 1;
	case EV_GO_START:
		r = oc_res(&c->gs, &c->n_gs, e->a[0]);
		return r && r->st == OG_RUNNABLE && r->gen == gen && e->a[1] == r->seq + 1;
	case EV_GO_UNBLOCK:
		r = oc_res(&c->gs, &c->n_gs, e->a[0]);
		return r && r->st == OG_WAITING && r->gen == gen && e->a[1] == r->seq + 1;
	case EV_GO_SYSCALL_END_BLOCKED:
		r = m->p == NONE ? NULL : oc_res(&c->ps, &c->n_ps, m->p);
		return !r || r->st != OP_SYSCALL;
	default:
		return true;
	}
}

static void oc_set(struct oc_res **v, size_t *n, uint64_t id, uint8_t st, uint64_t seq,
		   uint64_t gen)
{
	struct oc_res *r = oc_res(v, n, id);
	if (r)
		*r = (struct oc_res){st, seq, gen};
}

/* Takes ev: the state changes order.go makes (the checks the readers make are theirs). */
static void oc_take(struct order_check *c, struct oc_m *m, const struct oc_ev *e, uint64_t gen)
{
	struct oc_res *g = m->g ? oc_res(&c->gs, &c->n_gs, m->g) : NULL;
	struct oc_res *p = m->p != NONE ? oc_res(&c->ps, &c->n_ps, m->p) : NULL;
	switch (e->type) {
	case EV_PROC_STATUS:
		oc_set(&c->ps, &c->n_ps, e->a[0], (uint8_t)e->a[1], 0, gen);
		if (e->a[1] == OP_RUNNING || e->a[1] == OP_SYSCALL)
			m->p = e->a[0];
		break;
	case EV_PROC_START:
		oc_set(&c->ps, &c->n_ps, e->a[0], OP_RUNNING, e->a[1], gen);
		m->p = e->a[0];
		break;
	case EV_PROC_STEAL:
		oc_set(&c->ps, &c->n_ps, e->a[0], OP_IDLE, e->a[1], gen);
		{
			struct oc_m *victim = oc_m(c, e->a[2]);
			if (victim && victim->p == e->a[0])
				victim->p = NONE;
		}
		break;
	case EV_PROC_STOP:
		if (p)
			p->st = OP_IDLE;
		m->p = NONE;
		break;
	case EV_GO_STATUS:
		oc_set(&c->gs, &c->n_gs, e->a[0], (uint8_t)e->a[2], 0, gen);
		if (e->a[2] == OG_RUNNING)
			m->g = e->a[0];
		else if (e->a[2] == OG_SYSCALL) {
			struct oc_m *in = e->a[1] == NONE ? NULL : oc_m(c, e->a[1]);
			if (in)
				in->g = e->a[0];
		}
		break;
	case EV_GO_CREATE:
	case EV_GO_CREATE_SYSCALL:
		oc_set(&c->gs, &c->n_gs, e->a[0],
		       e->type == EV_GO_CREATE ? OG_RUNNABLE : OG_SYSCALL, 0, gen);
		if (e->type == EV_GO_CREATE_SYSCALL)
			m->g = e->a[0];
		break;
	case EV_GO_START:
		oc_set(&c->gs, &c->n_gs, e->a[0], OG_RUNNING, e->a[1], gen);
		m->g = e->a[0];
		break;
	case EV_GO_UNBLOCK:
		oc_set(&c->gs, &c->n_gs, e->a[0], OG_RUNNABLE, e->a[1], gen);
		break;
	case EV_GO_DESTROY:
	case EV_GO_DESTROY_SYSCALL:
	case EV_GO_STOP:
	case EV_GO_BLOCK:
	case EV_GO_SYSCALL_END_BLOCKED:
		if (g)
			g->st = e->type == EV_GO_STOP || e->type == EV_GO_SYSCALL_END_BLOCKED ? OG_RUNNABLE
			      : e->type == EV_GO_BLOCK ? OG_WAITING : OG_GONE;
		m->g = 0;
		if (e->type == EV_GO_DESTROY_SYSCALL && p) {
			p->st = OP_IDLE;
			m->p = NONE;
		}
		break;
	case EV_GO_SYSCALL_BEGIN:
		if (g)
			g->st = OG_SYSCALL;
		if (p)
			*p = (struct oc_res){OP_SYSCALL, e->a[0], gen};
		break;
	case EV_GO_SYSCALL_END:
		if (g)
			g->st = OG_RUNNING;
		if (p)
			p->st = OP_RUNNING;
		break;
	default:
		break;
	}
}

static void oc_fail(struct order_check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void oc_fail(struct order_check *c, const char *fmt, ...)
{
	if (c->why)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&c->why, fmt, ap) < 0)
		c->why = NULL;
	va_end(ap);
}

/* Decodes one M's batches (sorted, in file order) into c->evs; false on a malformed batch. */
static bool oc_decode(struct order_check *c, const struct oc_batch *b, size_t n, double mul)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = b[i].data, *end = p + b[i].len;
		/* as the readers do: the base and each delta scaled and truncated apart */
		int64_t t = (int64_t)((double)b[i].base * mul);
		while (p < end) {
			uint8_t type = *p++;
			if (type >= sizeof v2_nargs || v2_nargs[type] < 0) {
				oc_fail(c, "M %llu: event type %u is not a timed 1.22 event",
					(unsigned long long)b[i].m, type);
				return false;
			}
			struct oc_ev e = {.type = type};
			uint64_t dt;
			size_t k = gt_uvarint_get(p, end, &dt);
			p += k;
			for (int a = 0; k && a < v2_nargs[type]; a++) {
				k = gt_uvarint_get(p, end, a < 4 ? &e.a[a] : &dt);
				p += k;
			}
			if (!k) {
				oc_fail(c, "M %llu: a truncated event", (unsigned long long)b[i].m);
				return false;
			}
			t += (int64_t)((double)dt * mul);
			e.t = t;
			if (c->n_evs == c->cap_evs) {
				size_t cap = c->cap_evs ? c->cap_evs * 2 : 4096;
				struct oc_ev *v = realloc(c->evs, cap * sizeof *v);
				if (!v)
					return false;
				c->evs = v;
				c->cap_evs = cap;
			}
			c->evs[c->n_evs++] = e;
		}
	}
	return true;
}

static int64_t oc_head(const struct order_check *c, const struct oc_cursor *k)
{
	return c->evs[k->at].t;
}

static void oc_sift(const struct order_check *c, struct oc_cursor *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, s = i;
		if (l < n && oc_head(c, &h[l]) < oc_head(c, &h[s]))
			s = l;
		if (l + 1 < n && oc_head(c, &h[l + 1]) < oc_head(c, &h[s]))
			s = l + 1;
		if (s == i)
			return;
		struct oc_cursor t = h[i];
		h[i] = h[s];
		h[s] = t;
		i = s;
	}
}

static const char *oc_name(uint8_t type)
{
	static const char *const names[] = {
		[EV_PROC_START] = "ProcStart", [EV_PROC_STEAL] = "ProcSteal",
		[EV_GO_START] = "GoStart", [EV_GO_UNBLOCK] = "GoUnblock",
		[EV_GO_SYSCALL_END_BLOCKED] = "GoSyscallEndBlocked"};
	return type < sizeof names / sizeof *names && names[type] ? names[type] : "event";
}

/* Checks the heap's cursors at time t from node i down (the earliest form a subtree). */
static void oc_ties(struct order_check *c, const struct oc_cursor *h, size_t nh, size_t i,
		    int64_t t, uint64_t gen)
{
	if (i >= nh || c->why || oc_head(c, &h[i]) != t)
		return;
	const struct oc_ev *e = &c->evs[h[i].at];
	struct oc_m *m = oc_m(c, h[i].m);
	if (m && !oc_ready(c, m, e, gen))
		oc_fail(c, "generation %llu, time %lld: M %llu's %s(%llu, %llu) must wait for an "
			"event of another M at the same or a later time",
			(unsigned long long)gen, (long long)t, (unsigned long long)m->id,
			oc_name(e->type), (unsigned long long)e->a[0], (unsigned long long)e->a[1]);
	oc_ties(c, h, nh, 2 * i + 1, t, gen);
	oc_ties(c, h, nh, 2 * i + 2, t, gen);
}

/* One generation: its event batches ordered as the readers order them. */
static void oc_generation(struct order_check *c, uint64_t gen, struct oc_batch *b, size_t n,
			  uint64_t freq)
{
	double mul = 1.0 / ((double)freq / 1e9);   /* Go's frequency.mul factor */
	qsort(b, n, sizeof *b, by_m_then_order);
	struct oc_cursor *h = calloc(n ? n : 1, sizeof *h);
	size_t nh = 0;
	c->n_evs = 0;
	for (size_t i = 0, j; i < n && !c->why; i = j) {
		for (j = i; j < n && b[j].m == b[i].m; j++)
			;
		size_t start = c->n_evs;
		if (!h || !oc_decode(c, &b[i], j - i, mul)) {
			oc_fail(c, "generation %llu unreadable", (unsigned long long)gen);
			break;
		}
		if (c->n_evs > start)
			h[nh++] = (struct oc_cursor){b[i].m, start, c->n_evs};
	}
	for (size_t i = nh; i-- > 0;)
		oc_sift(c, h, nh, i);
	while (nh && !c->why) {
		/* every M whose next event is the earliest must be able to take it */
		oc_ties(c, h, nh, 0, oc_head(c, &h[0]), gen);
		if (c->why)
			break;
		struct oc_m *m = oc_m(c, h[0].m);
		if (!m)
			break;
		oc_take(c, m, &c->evs[h[0].at], gen);
		if (++h[0].at == h[0].end)
			h[0] = h[--nh];
		oc_sift(c, h, nh, 0);
	}
	free(h);
}

int gt_trace_v2_order_check(const char *trace, char **why)
{
	*why = NULL;
	int fd = open(trace, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	uint8_t *data = malloc((size_t)st.st_size + 1);
	ssize_t got = data ? pread(fd, data, (size_t)st.st_size, 0) : -1;
	close(fd);
	if (got != st.st_size || got < 16 || memcmp(data, "go 1.22 trace\0\0\0", 16) != 0) {
		free(data);
		return -1;
	}
	struct order_check c = {0};
	struct oc_batch *b = NULL;
	size_t nb = 0, cap = 0;
	uint64_t gen = 0, freq = 0;
	const uint8_t *p = data + 16, *end = data + got;
	for (;;) {
		uint64_t bgen = 0, m = 0, base = 0, size = 0;
		size_t k = p < end && *p == 1 ? 1 : 0, u;
		if (k && (u = gt_uvarint_get(p + k, end, &bgen)))
			k += u;
		else
			k = 0;
		if (k && (u = gt_uvarint_get(p + k, end, &m)))
			k += u;
		else
			k = 0;
		if (k && (u = gt_uvarint_get(p + k, end, &base)))
			k += u;
		else
			k = 0;
		if (k && (u = gt_uvarint_get(p + k, end, &size)))
			k += u;
		else
			k = 0;
		bool whole = k && size <= (uint64_t)(end - p - k);
		if (!whole || bgen != gen) {
			/* a generation ends; without a Frequency (which the readers refuse) its
			 * ticks are taken as ns */
			if (gen)
				oc_generation(&c, gen, b, nb, freq ? freq : 1000000000);
			nb = 0;
			freq = 0;
			gen = bgen;
			if (!whole || c.why)
				break;
		}
		const uint8_t *d = p + k;
		if (size && d[0] == 8)
			gt_uvarint_get(d + 1, d + size, &freq);
		else if (size && d[0] != 2 && d[0] != 4 && d[0] != 6) {
			if (nb == cap) {
				cap = cap ? cap * 2 : 1024;
				struct oc_batch *v = realloc(b, cap * sizeof *v);
				if (!v)
					break;
				b = v;
			}
			b[nb] = (struct oc_batch){m, base, d, size, nb};
			nb++;
		}
		p = d + size;
	}
	free(b);
	free(data);
	free(c.gs);
	free(c.ps);
	free(c.ms);
	free(c.evs);
	*why = c.why;
	return c.why ? 1 : 0;
}
