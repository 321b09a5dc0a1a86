/* Go's own trace readers as test oracles: a thin C layer over tests/support/trace-oracle. */
#include "oracle.h"
#include "oracle_v2.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GT_ORACLE_SCRIPT
#error "GT_ORACLE_SCRIPT (path of tests/support/trace-oracle) must be defined by the build"
#endif

/* Runs the oracle script with ARGV (after the script name); returns its exit status, or -1 if
 * it could not run or died by a signal.  Its stdout is returned in *OUT; stderr is inherited. */
static int run_oracle(const char *const *args, char **out)
{
	const char *argv[16] = { "bash", GT_ORACLE_SCRIPT };
	size_t argc = 2;
	for (; args[argc - 2] && argc < 15; argc++)
		argv[argc] = args[argc - 2];
	argv[argc] = NULL;

	*out = NULL;
	int pipefd[2];
	if (pipe(pipefd) != 0) {
		perror("gt_oracle: pipe");
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("gt_oracle: fork");
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "gt_oracle: cannot run bash %s: %s\n", GT_ORACLE_SCRIPT,
			strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);

	size_t len = 0, cap = 0;
	char *buf = NULL;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			char *grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
		}
		ssize_t n = read(pipefd[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pipefd[0]);
	if (buf)
		buf[len] = '\0';

	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			free(buf);
			return -1;
		}
	if (!buf || !WIFEXITED(status)) {
		free(buf);
		return -1;
	}
	*out = buf;
	return WEXITSTATUS(status);
}

int gt_oracle_check(const char *trace, bool quick, char **report)
{
	const char *quick_args[] = { "--quick", "--", trace, NULL };
	const char *full_args[] = { "--", trace, NULL };
	char *out;
	int rc = run_oracle(quick ? quick_args : full_args, &out);
	if (rc != 0 && rc != 1) {
		fprintf(stderr, "gt_oracle_check: the oracle could not run on %s (status %d)\n",
			trace, rc);
		rc = -1;
	}
	/* a go1.22 trace: also what Go 1.22-1.25 accept only with some map orders */
	char *why = NULL;
	int order = rc >= 0 && out ? gt_trace_v2_order_check(trace, &why) : -1;
	if (order >= 0) {
		char *more = NULL;
		if ((order ? asprintf(&more, "%sFAIL order: %s\n", out, why)
			   : asprintf(&more, "%sok order\n", out)) >= 0) {
			free(out);
			out = more;
		}
		if (order)
			rc = 1;
	}
	free(why);
	if (report)
		*report = out;
	else
		free(out);
	return rc;
}

/* Whether REPORT has a line starting with PREFIX followed by CHECK and then TERMINATOR. */
static bool report_has(const char *report, const char *prefix, const char *check, char terminator)
{
	size_t plen = strlen(prefix), clen = strlen(check);
	for (const char *line = report; line && *line;) {
		if (strncmp(line, prefix, plen) == 0 && strncmp(line + plen, check, clen) == 0 &&
		    line[plen + clen] == terminator)
			return true;
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return false;
}

bool gt_oracle_passed(const char *report, const char *check)
{
	return report_has(report, "ok ", check, '\n');
}

bool gt_oracle_failed(const char *report, const char *check)
{
	return report_has(report, "FAIL ", check, ':');
}

/* ---- Go 1.19 events ---------------------------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*v = x;
	return true;
}

static bool parse_i64(const char *s, int64_t *v)
{
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*v = x;
	return true;
}

/* One dump line: "<ts> <Type> p=<P> g=<G> off=<off> name=value ...".  The first value that
 * is not a number starts the string arguments, kept as printed. */
static bool parse_event_line(char *line, struct gt_event *ev)
{
	memset(ev, 0, sizeof *ev);
	char printed[1024];
	snprintf(printed, sizeof printed, "%s", line);
	char *save, *tok = strtok_r(line, " ", &save);
	if (!tok || !parse_i64(tok, &ev->ts_ns))
		return false;
	tok = strtok_r(NULL, " ", &save);
	if (!tok || strlen(tok) >= sizeof ev->type)
		return false;
	strcpy(ev->type, tok);
	int fixed = 0;
	while ((tok = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(tok, '=');
		if (!eq)
			break;
		*eq = '\0';
		const char *name = tok, *value = eq + 1;
		if (fixed < 3) {
			bool good =
				(fixed == 0 && !strcmp(name, "p") && parse_i64(value, &ev->p)) ||
				(fixed == 1 && !strcmp(name, "g") && parse_i64(value, &ev->g)) ||
				(fixed == 2 && !strcmp(name, "off") && parse_u64(value, &ev->off));
			if (!good)
				return false;
			fixed++;
			continue;
		}
		struct gt_event_arg *arg = &ev->args[ev->n_args];
		if (ev->n_args == GT_EVENT_MAX_ARGS || strlen(name) >= sizeof arg->name ||
		    !parse_u64(value, &arg->value)) {
			size_t at = (size_t)(tok - line);
			if (at < sizeof printed)
				snprintf(ev->strings, sizeof ev->strings, "%s", printed + at);
			break;
		}
		strcpy(arg->name, name);
		ev->n_args++;
	}
	return fixed == 3;
}

static struct gt_events *events_new(size_t cap)
{
	struct gt_events *events = calloc(1, sizeof *events);
	if (events && cap && !(events->ev = calloc(cap, sizeof *events->ev))) {
		free(events);
		return NULL;
	}
	return events;
}

struct gt_events *gt_events_parse_119(const char *trace)
{
	const char *args[] = { "--dump", "1.19", "--", trace, NULL };
	char *dump;
	if (run_oracle(args, &dump) != 0) {
		free(dump);
		return NULL;
	}
	size_t lines = 0;
	for (const char *c = dump; *c; c++)
		lines += *c == '\n';
	struct gt_events *events = events_new(lines + 1);
	if (!events) {
		free(dump);
		return NULL;
	}
	char *save;
	for (char *line = strtok_r(dump, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (parse_event_line(line, &events->ev[events->n]))
			events->n++;
	free(dump);
	return events;
}

void gt_events_free(struct gt_events *events)
{
	if (!events)
		return;
	free(events->ev);
	free(events);
}

static bool event_matches(const struct gt_event *ev, const char *type, int64_t g, int64_t p)
{
	return (!type || !strcmp(ev->type, type)) && (g == GT_ANY || ev->g == g) &&
	       (p == GT_ANY || ev->p == p);
}

ssize_t gt_events_find(const struct gt_events *events, size_t from, const char *type, int64_t g,
		       int64_t p)
{
	for (size_t i = from; i < events->n; i++)
		if (event_matches(&events->ev[i], type, g, p))
			return (ssize_t)i;
	return -1;
}

ssize_t gt_events_g_end(const struct gt_events *events, int64_t g)
{
	ssize_t end = gt_events_find(events, 0, "GoEnd", g, GT_ANY);
	for (size_t i = events->n; end < 0 && i-- > 0;)
		if (event_matches(&events->ev[i], NULL, g, GT_ANY))
			end = (ssize_t)i;
	return end;
}

bool gt_event_arg(const struct gt_event *ev, const char *name, uint64_t *value)
{
	for (int i = 0; i < ev->n_args; i++)
		if (!strcmp(ev->args[i].name, name)) {
			if (value)
				*value = ev->args[i].value;
			return true;
		}
	return false;
}

const char *gt_event_string(const struct gt_event *ev, const char *name, char *buf, size_t len)
{
	size_t nlen = strlen(name);
	const char *v = NULL;
	for (const char *s = ev->strings; (s = strstr(s, name)); s += nlen)
		if ((s == ev->strings || s[-1] == ' ') && s[nlen] == '=') {
			v = s + nlen + 1;
			break;
		}
	if (!v || !len)
		return NULL;
	const char *end = strcmp(name, "category") ? NULL : strstr(v, " message=");
	size_t vlen = end ? (size_t)(end - v) : strlen(v);
	snprintf(buf, len, "%.*s", (int)vlen, v);
	return buf;
}

ssize_t gt_events_find_arg(const struct gt_events *events, size_t from, const char *type,
			   const char *name, uint64_t value)
{
	uint64_t v;
	for (size_t i = from; i < events->n; i++)
		if (event_matches(&events->ev[i], type, GT_ANY, GT_ANY) &&
		    gt_event_arg(&events->ev[i], name, &v) && v == value)
			return (ssize_t)i;
	return -1;
}

size_t gt_events_count(const struct gt_events *events, const char *type, int64_t g, int64_t p)
{
	size_t n = 0;
	for (size_t i = 0; i < events->n; i++)
		n += event_matches(&events->ev[i], type, g, p);
	return n;
}

struct gt_events *gt_events_filter(const struct gt_events *events, const char *type, int64_t g,
				   int64_t p)
{
	struct gt_events *out = events_new(gt_events_count(events, type, g, p));
	if (!out)
		return NULL;
	for (size_t i = 0; i < events->n; i++)
		if (event_matches(&events->ev[i], type, g, p))
			out->ev[out->n++] = events->ev[i];
	return out;
}

/* ---- Go 1.23 dump ------------------------------------------------------------------------ */

char *gt_dump_123(const char *trace)
{
	const char *args[] = { "--dump", "1.23", "--", trace, NULL };
	char *dump;
	if (run_oracle(args, &dump) != 0) {
		free(dump);
		return NULL;
	}
	return dump;
}

/* Whether the line [LINE, END) contains TOKEN as a whole space-separated token. */
static bool line_has_token(const char *line, const char *end, const char *token, size_t tlen)
{
	for (const char *t = line; t < end;) {
		const char *space = memchr(t, ' ', (size_t)(end - t));
		const char *tend = space ? space : end;
		if ((size_t)(tend - t) == tlen && !memcmp(t, token, tlen))
			return true;
		t = tend + 1;
	}
	return false;
}

static bool header_matches(const char *line, const char *end, const char *match)
{
	if (strncmp(line, "M=", 2) != 0)
		return false;
	for (const char *m = match; *m;) {
		while (*m == ' ')
			m++;
		size_t tlen = strcspn(m, " ");
		if (tlen && !line_has_token(line, end, m, tlen))
			return false;
		m += tlen;
	}
	return true;
}

static const char *line_end(const char *line)
{
	const char *nl = strchr(line, '\n');
	return nl ? nl : line + strlen(line);
}

static const char *next_line(const char *line)
{
	const char *end = line_end(line);
	return *end ? end + 1 : end;
}

/* The NTH header line matching MATCH, or NULL. */
static const char *find_header(const char *dump, const char *match, size_t nth)
{
	for (const char *line = dump; *line; line = next_line(line))
		if (header_matches(line, line_end(line), match) && nth-- == 0)
			return line;
	return NULL;
}

size_t gt_dump_123_count(const char *dump, const char *match)
{
	size_t n = 0;
	for (const char *line = dump; *line; line = next_line(line))
		n += header_matches(line, line_end(line), match);
	return n;
}

char *gt_dump_123_header(const char *dump, const char *match, size_t nth)
{
	const char *header = find_header(dump, match, nth);
	return header ? strndup(header, (size_t)(line_end(header) - header)) : NULL;
}

char *gt_dump_123_stack(const char *dump, const char *match, size_t nth, const char *which)
{
	const char *header = find_header(dump, match, nth);
	if (!header)
		return NULL;
	char *text;
	size_t size;
	FILE *out = open_memstream(&text, &size);
	if (!out)
		return NULL;
	size_t wlen = strlen(which);
	const char *line = next_line(header);
	/* The blocks under a header run until the next header line. */
	while (*line && strncmp(line, "M=", 2) != 0) {
		bool wanted = !strncmp(line, which, wlen) && line[wlen] == '=';
		line = next_line(line);
		/* Frames: "\tfunc @ 0xPC" then "\t\tfile:line"; a blank line ends the block. */
		while (line[0] == '\t' && line[1] != '\t') {
			const char *fn = line + 1, *fn_end = strstr(fn, " @ ");
			const char *eol = line_end(line);
			if (!fn_end || fn_end > eol)
				fn_end = eol;
			const char *loc = next_line(line);
			const char *loc_end = loc;
			if (loc[0] == '\t' && loc[1] == '\t') {
				loc_end = line_end(loc);
				loc += 2;
				line = next_line(loc);
			} else {
				line = loc;
			}
			if (wanted)
				fprintf(out, "%.*s %.*s\n", (int)(fn_end - fn), fn,
					(int)(loc_end - loc), loc);
		}
		if (wanted)
			break;
		while (*line == '\n')
			line++;
	}
	fclose(out);
	return text;
}

/* ---- profiles ---------------------------------------------------------------------------- */

char *gt_pprof_text(const char *trace, const char *kind, const char *go_version)
{
	const char *args[] = { "--pprof", kind, "--go", go_version, "--", trace, NULL };
	char *text;
	if (run_oracle(args, &text) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
