/* cli_common: see cli_common.h. */
#include "cli_common.h"

#include "program_check.h"

#include <ctype.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void gt_cli_fail(const char *command, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "gotrace %s: ", command);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int gt_cli_bad_option(const char *command, int getopt_result, char **argv)
{
	if (getopt_result == ':')
		gt_cli_fail(command, "option '%s' needs an argument (see gotrace %s --help)",
			    argv[optind - 1], command);
	else if (optopt != 0)
		gt_cli_fail(command, "unknown option '-%c' (see gotrace %s --help)", optopt,
			    command);
	else
		gt_cli_fail(command, "unknown option '%s' (see gotrace %s --help)",
			    argv[optind - 1], command);
	return 2;
}

/* Digits with an optional fraction at the start of s ("1", "1.5", ".5": no sign, exponent,
 * hex, inf or nan), its end in *end. */
static int leading_number(const char *s, double *v, const char **end)
{
	char num[64];
	size_t whole = strspn(s, "0123456789"), frac = 0, len = whole;
	if (s[whole] == '.') {
		frac = strspn(s + whole + 1, "0123456789");
		len += 1 + frac;
	}
	if ((!whole && !frac) || len >= sizeof num)
		return -1;
	memcpy(num, s, len);
	num[len] = 0;
	*v = strtod(num, NULL);
	*end = s + len;
	return 0;
}

int gt_cli_parse_size(const char *s, uint64_t *bytes)
{
	double v;
	const char *end;
	if (leading_number(s, &v, &end) != 0)
		return -1;
	static const char units[] = "KMGT";
	const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
	if (u) {
		for (long i = 0; i <= u - units; i++)
			v *= 1024;
		end++;
		if (end[0] == 'i' && end[1] == 'B')
			end += 2;
	}
	if (*end == 'B')
		end++;
	if (*end || v < 1 || v >= 0x1p62)
		return -1;
	*bytes = (uint64_t)v;
	return 0;
}

int gt_cli_parse_duration(const char *s, double bare_ns, uint64_t *ns)
{
	double v, mult = bare_ns;
	const char *end;
	if (leading_number(s, &v, &end) != 0)
		return -1;
	if (!strcmp(end, "ns"))
		mult = 1;
	else if (!strcmp(end, "us"))
		mult = 1e3;
	else if (!strcmp(end, "ms"))
		mult = 1e6;
	else if (!strcmp(end, "s"))
		mult = 1e9;
	else if (*end)
		return -1;
	if (v * mult > 1e18)
		return -1;
	*ns = (uint64_t)(v * mult + 0.5);
	return 0;
}

static double monotonic_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void gt_cli_format_size(uint64_t bytes, char *buf, size_t size)
{
	if (bytes >= 10u << 20)
		snprintf(buf, size, "%.0f MiB", (double)bytes / (1 << 20));
	else if (bytes >= 1u << 20)
		snprintf(buf, size, "%.1f MiB", (double)bytes / (1 << 20));
	else if (bytes >= 1u << 10)
		snprintf(buf, size, "%.0f KiB", (double)bytes / (1 << 10));
	else
		snprintf(buf, size, "%llu B", (unsigned long long)bytes);
}

void gt_cli_progress_start(struct gt_cli_progress *p, const char *label)
{
	*p = (struct gt_cli_progress){ .label = label, .started = monotonic_seconds(),
				       .tty = isatty(2) == 1 };
}

void gt_cli_progress_update(void *progress, uint64_t done, uint64_t total)
{
	enum { BAR = 30 };
	struct gt_cli_progress *p = progress;
	double now = monotonic_seconds();
	if (!p->tty || total == 0 || now - p->started < 1.0 || now - p->last_drawn < 0.1)
		return;
	double fraction = done >= total ? 1.0 : (double)done / (double)total;
	char bar[BAR + 1];
	for (int i = 0; i < BAR; i++)
		bar[i] = i < (int)(fraction * BAR) ? '#' : '-';
	bar[BAR] = '\0';
	fprintf(stderr, "\rgotrace: converting %s [%s] %3d%%  %.0f s", p->label, bar,
		(int)(fraction * 100), now - p->started);
	fflush(stderr);
	p->last_drawn = now;
	p->shown = true;
}

void gt_cli_progress_end(struct gt_cli_progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = false;
}

uint64_t gt_cli_capture_bytes(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return 0;
	return (uint64_t)(st.st_size < st.st_blocks * 512 ? st.st_size : st.st_blocks * 512);
}

int gt_cli_trace_format(const char *command, const char *text, enum gt_trace_format *out)
{
	const char *from = text ? "--format" : "GOTRACE_FORMAT";
	if (!text)
		text = getenv("GOTRACE_FORMAT");
	if (!text || !*text) {
		*out = GT_CLI_DEFAULT_FORMAT;
		return 0;
	}
	if (!strcmp(text, "go1.22") || !strcmp(text, "1.22")) {
		*out = GT_FORMAT_GO122;
		return 0;
	}
	if (!strcmp(text, "go1.19") || !strcmp(text, "1.19")) {
		*out = GT_FORMAT_GO119;
		return 0;
	}
	gt_cli_fail(command, "%s must be go1.22 (Go 1.22 and later) or go1.19 (Go 1.19-1.21, "
		    "gotraceui 0.4), not '%s'", from, text);
	return 2;
}

/* Whether the Go at PATH (a go command) is older than Go 1.22, as its GOROOT's VERSION file
 * ("go1.21.5") says; an unreadable or unusual file is not taken as older. */
static bool go_before_122(const char *path)
{
	char real[PATH_MAX], version[PATH_MAX + 16];
	if (!realpath(path, real))
		return false;
	char *slash = strrchr(real, '/');
	if (slash)
		*slash = '\0';
	snprintf(version, sizeof version, "%s/../VERSION", real);
	FILE *f = fopen(version, "re");
	if (!f)
		return false;
	unsigned major = 0, minor = 0;
	int n = fscanf(f, "go%u.%u", &major, &minor);
	fclose(f);
	return n == 2 && major == 1 && minor < 22;
}

/* The newest Go from 1.22 on installed where scripts/lib/go-toolchains looks: Debian's
 * /usr/lib/go-1.NN, and the releases Debian bookworm lacks that scripts/setup unpacks into
 * $GT_GO_ROOT/1.NN (default /opt/gotrace-go); its go command in path, false when none. */
static bool newest_go(char *path, size_t size)
{
	const char *root = getenv("GT_GO_ROOT");
	char pattern[2][PATH_MAX];
	snprintf(pattern[0], sizeof pattern[0], "/usr/lib/go-1.*/bin/go");
	snprintf(pattern[1], sizeof pattern[1], "%s/1.*/usr/lib/go-1.*/bin/go",
		 root && *root ? root : "/opt/gotrace-go");
	unsigned best = 0;
	for (int k = 0; k < 2; k++) {
		glob_t g;
		if (glob(pattern[k], 0, NULL, &g) != 0)
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			const char *v = strstr(g.gl_pathv[i], "/go-1.");
			unsigned minor = v ? (unsigned)strtoul(v + 6, NULL, 10) : 0;
			if (minor >= 22 && minor > best && access(g.gl_pathv[i], X_OK) == 0) {
				best = minor;
				snprintf(path, size, "%s", g.gl_pathv[i]);
			}
		}
		globfree(&g);
	}
	return best != 0;
}

/* How to call a Go whose `go tool trace` reads format: "go" when it is on PATH (for go1.22
 * unless its VERSION says it is older than 1.22; otherwise not checked: the hint says which
 * one is needed), else an installed Go (for go1.22 the newest: its viewer is the current
 * one), else NULL. */
static const char *go_command(enum gt_trace_format format)
{
	static const char *const go119[] = {"/usr/lib/go-1.23/bin/go", "/usr/lib/go-1.19/bin/go",
					    NULL};
	static char path[PATH_MAX];
	if (gt_resolve_command("go", path, sizeof path) == 0 &&
	    (format != GT_FORMAT_GO122 || !go_before_122(path)))
		return "go";
	if (format == GT_FORMAT_GO122)
		return newest_go(path, sizeof path) ? path : NULL;
	for (const char *const *go = go119; *go; go++)
		if (access(*go, X_OK) == 0)
			return *go;
	return NULL;
}

void gt_cli_next_steps(const char *output, enum gt_trace_format format, bool kept)
{
	const char *go = go_command(format);
	if (go != NULL && format == GT_FORMAT_GO122)
		fprintf(stderr, "gotrace: next: %s tool trace %s   (Go 1.22 or later; for older "
			"readers, Go 1.19-1.21 or gotraceui v0.4, use --format go1.19)\n", go, output);
	else if (go != NULL)
		fprintf(stderr, "gotrace: next: %s tool trace %s\n", go, output);
	else
		fprintf(stderr, "gotrace: next: go tool trace %s   (no Go found: apt install "
			"golang-1.23-go from bookworm-backports%s)\n", output,
			format == GT_FORMAT_GO122 ? "; Go 1.22 or later reads this format, for older "
			"readers use --format go1.19" : "");
	if (kept)
		fprintf(stderr, "gotrace:       gotrace report %s   (no Go needed; from the kept "
			"capture)\n", output);
	else
		fprintf(stderr, "gotrace:       gotrace report %s   (no Go needed; --keep-capture "
			"adds lock addresses, fd kinds and syscall names)\n", output);
}
