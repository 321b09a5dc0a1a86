/* go_oracle: see go_oracle.h. */
#include "go_oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void copy_trunc(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);
	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* Runs cmd with stdout to a pipe read by line callback, stderr to a temporary file whose
 * last non-empty line goes to err.  Returns the exit status. */
static int run_lines(const char *cmd, void (*line)(void *, char *), void *ctx, char *err,
		     size_t errlen)
{
	char errpath[] = "/tmp/go-oracle-err.XXXXXX";
	int efd = mkstemp(errpath);
	if (efd < 0)
		return -1;
	close(efd);
	char full[8192];
	snprintf(full, sizeof full, "GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off %s 2>%s", cmd, errpath);
	FILE *p = popen(full, "r");
	if (!p) {
		unlink(errpath);
		return -1;
	}
	char buf[4096];
	while (fgets(buf, sizeof buf, p))
		line(ctx, buf);
	int st = pclose(p);
	err[0] = 0;
	FILE *e = fopen(errpath, "r");
	if (e) {
		while (fgets(buf, sizeof buf, e)) {
			buf[strcspn(buf, "\n")] = 0;
			if (buf[0] && strncmp(buf, "20", 2) != 0)  /* skip "2024/.. Parsing trace" logs */
				copy_trunc(err, errlen, buf);
			else if (buf[0] && strstr(buf, "failed"))
				copy_trunc(err, errlen, buf);
		}
		fclose(e);
	}
	unlink(errpath);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void add119(void *ctx, char *s)
{
	struct go119_trace *t = ctx;
	struct go119_event e = {0};
	long long ns, p, g;
	int n = 0;
	if (sscanf(s, "%lld %31s p=%lld g=%lld off=%*d %n", &ns, e.type, &p, &g, &n) < 4 || !n)
		return;
	e.ns = ns;
	e.p = p;
	e.g = g;
	snprintf(e.args, sizeof e.args, "%s", s + n);
	e.args[strcspn(e.args, "\n")] = 0;
	if (!(t->n & (t->n + 1)) || !t->ev) {
		struct go119_event *ne = realloc(t->ev, (2 * t->n + 2) * sizeof *ne);
		if (!ne)
			return;
		t->ev = ne;
	}
	t->ev[t->n++] = e;
}

bool go119_parse(const char *trace_path, struct go119_trace *out)
{
	memset(out, 0, sizeof *out);
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s -d '%s'", GO119_TRACE, trace_path);
	out->ok = run_lines(cmd, add119, out, out->error, sizeof out->error) == 0;
	return out->ok;
}

struct parse123 {
	struct go123_trace *t;
	int in_stack;          /* 0 none, 1 Stack=, 2 TransitionStack= */
};

static void append_name(char *dst, size_t len, const char *name)
{
	size_t used = strlen(dst);
	snprintf(dst + used, len - used, "%s%s", used ? ";" : "", name);
}

static void add123(void *ctx, char *s)
{
	struct parse123 *ps = ctx;
	struct go123_trace *t = ps->t;
	s[strcspn(s, "\n")] = 0;
	if (!strncmp(s, "M=", 2)) {
		if (!(t->n & (t->n + 1)) || !t->ev) {
			struct go123_event *ne = realloc(t->ev, (2 * t->n + 2) * sizeof *ne);
			if (!ne)
				return;
			t->ev = ne;
		}
		struct go123_event *e = &t->ev[t->n++];
		memset(e, 0, sizeof *e);
		snprintf(e->line, sizeof e->line, "%s", s);
		long long m, p, g, time = 0;
		sscanf(s, "M=%lld P=%lld G=%lld %23s Time=%lld", &m, &p, &g, e->kind, &time);
		e->m = m;
		e->p = p;
		e->g = g;
		e->time = time;
		const char *r = strstr(s, "Resource=");
		if (r)
			sscanf(r, "Resource=%31s", e->resource);
		r = strstr(s, "Reason=\"");
		if (r) {
			r += 8;
			size_t k = strcspn(r, "\"");
			snprintf(e->reason, sizeof e->reason, "%.*s", (int)k, r);
		}
		r = strrchr(s, ' ');
		if (r && strstr(r, "->"))
			snprintf(e->transition, sizeof e->transition, "%s", r + 1);
		ps->in_stack = 0;
		return;
	}
	if (!strcmp(s, "Stack=")) {
		ps->in_stack = 1;
		return;
	}
	if (!strcmp(s, "TransitionStack=")) {
		ps->in_stack = 2;
		return;
	}
	if (ps->in_stack && t->n && s[0] == '\t' && s[1] != '\t') {
		char name[256];
		const char *at = strstr(s + 1, " @ ");
		size_t k = at ? (size_t)(at - (s + 1)) : strlen(s + 1);
		snprintf(name, sizeof name, "%.*s", (int)k, s + 1);
		struct go123_event *e = &t->ev[t->n - 1];
		if (ps->in_stack == 1)
			append_name(e->stack, sizeof e->stack, name);
		else
			append_name(e->tstack, sizeof e->tstack, name);
	}
}

bool go123_parse(const char *trace_path, struct go123_trace *out)
{
	memset(out, 0, sizeof *out);
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s -d=1 '%s'", GO123_TRACE, trace_path);
	struct parse123 ps = {out, 0};
	out->ok = run_lines(cmd, add123, &ps, out->error, sizeof out->error) == 0;
	return out->ok;
}

void go119_free(struct go119_trace *t)
{
	free(t->ev);
	t->ev = NULL;
}

void go123_free(struct go123_trace *t)
{
	free(t->ev);
	t->ev = NULL;
}

int64_t go119_arg(const struct go119_event *e, const char *key, int64_t def)
{
	size_t kl = strlen(key);
	for (const char *s = e->args; *s;) {
		if (!strncmp(s, key, kl) && s[kl] == '=')
			return strtoll(s + kl + 1, NULL, 10);
		s += strcspn(s, " ");
		s += strspn(s, " ");
	}
	return def;
}

size_t go119_count(const struct go119_trace *t, const char *type)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		n += !strcmp(t->ev[i].type, type);
	return n;
}

long go119_find(const struct go119_trace *t, const char *type, size_t k)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->ev[i].type, type) && k-- == 0)
			return (long)i;
	return -1;
}

long go119_find_arg(const struct go119_trace *t, const char *type, const char *key, int64_t value,
		    size_t k)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->ev[i].type, type) && go119_arg(&t->ev[i], key, INT64_MIN) == value &&
		    k-- == 0)
			return (long)i;
	return -1;
}
