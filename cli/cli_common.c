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

static sigset_t stop_signals;
static int stopped_by;

void gt_cli_stop_conversions_on(const sigset_t *signals)
{
	stop_signals = *signals;
}

int gt_cli_conversion_stopped(void)
{
	return stopped_by;
}

void gt_cli_say_conversion_stopped(const char *output, double done)
{
	fprintf(stderr, "gotrace: conversion of %s stopped by SIG%s at %.0f%% of the records: the "
		"trace ends there\n", output, sigabbrev_np(stopped_by), done * 100);
}

bool gt_cli_progress_update(void *progress, uint64_t done, uint64_t total)
{
	enum { BAR = 30 };
	struct gt_cli_progress *p = progress;
	sigset_t pending;
	if (sigpending(&pending) == 0)
		for (int sig = 1; sig < NSIG && !stopped_by; sig++)
			if (sigismember(&stop_signals, sig) == 1 && sigismember(&pending, sig) == 1)
				stopped_by = sig;
	if (stopped_by)
		return false;
	double now = monotonic_seconds();
	if (!p->tty || total == 0 || now - p->started < 1.0 || now - p->last_drawn < 0.1)
		return true;
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
	return true;
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

/* Who reads fmt, as the messages say it: "Go 1.22 and later" (conj "and") / "Go 1.22 or
 * later" (conj "or"), "Go 1.19-1.21, gotraceui v0.4" (sep ", ") / "... or gotraceui v0.4". */
static void format_readers(const struct gt_trace_format_desc *fmt, const char *conj,
			   const char *sep, char *buf, size_t size)
{
	int n = fmt->go_to ? snprintf(buf, size, "Go 1.%u-1.%u", fmt->go_from, fmt->go_to)
			   : snprintf(buf, size, "Go 1.%u %s later", fmt->go_from, conj);
	if (fmt->other_readers && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "%s%s", sep, fmt->other_readers);
}

int gt_cli_trace_format(const char *command, const char *text, enum gt_trace_format *out)
{
	const char *from = text ? "--format" : "GOTRACE_FORMAT";
	if (!text)
		text = getenv("GOTRACE_FORMAT");
	const struct gt_trace_format_desc *fmt =
		!text || !*text ? gt_trace_format_default() : gt_trace_format_named(text);
	if (fmt) {
		*out = fmt->format;
		return 0;
	}
	/* every format, the default first: "go1.22 (Go 1.22 and later) or go1.19 (...)" */
	char list[256] = "", readers[96];
	size_t used = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int f = 0; f < GT_FORMAT_COUNT && used < sizeof list; f++) {
			if (gt_trace_formats[f].is_default != (pass == 0))
				continue;
			format_readers(&gt_trace_formats[f], "and", ", ", readers, sizeof readers);
			used += (size_t)snprintf(list + used, sizeof list - used, "%s%s (%s)",
						 used ? " or " : "", gt_trace_formats[f].name, readers);
		}
	gt_cli_fail(command, "%s must be %s, not '%s'", from, list, text);
	return 2;
}

/* The widest line of the --format help (both commands wrap at it as they always did). */
#define HELP_WIDTH 83

/* Prints words from text after col columns already printed, wrapped to width with col
 * spaces before each further line. */
static void print_wrapped(FILE *f, const char *text, size_t col, size_t width)
{
	size_t at = col;
	bool first = true;
	while (*text) {
		size_t n = strcspn(text, " ");
		if (!first && at + 1 + n > width) {
			fprintf(f, "\n%*s", (int)col, "");
			at = col;
			first = true;
		}
		fprintf(f, "%s%.*s", first ? "" : " ", (int)n, text);
		at += n + !first;
		first = false;
		text += n;
		text += strspn(text, " ");
	}
	fputc('\n', f);
}

void gt_cli_format_help(FILE *f, size_t col)
{
	char text[512], readers[96];
	const struct gt_trace_format_desc *dflt = gt_trace_format_default();
	format_readers(dflt, "and", ", ", readers, sizeof readers);
	size_t used = (size_t)snprintf(text, sizeof text, "%s (the default: read by %s)", dflt->name,
				       readers);
	for (int k = 0; k < GT_FORMAT_COUNT && used < sizeof text; k++) {
		if (&gt_trace_formats[k] == dflt)
			continue;
		format_readers(&gt_trace_formats[k], "and", ", ", readers, sizeof readers);
		used += (size_t)snprintf(text + used, sizeof text - used, " or %s (for %s)",
					 gt_trace_formats[k].name, readers);
	}
	if (used < sizeof text)
		snprintf(text + used, sizeof text - used, "; GOTRACE_FORMAT sets the default");
	int n = fprintf(f, "      --format FORMAT");
	fprintf(f, "%*s", n < (int)col ? (int)col - n : 1, "");
	print_wrapped(f, text, col, HELP_WIDTH);
}

/* Whether the Go at PATH (a go command) is older than Go 1.minor, as its GOROOT's VERSION
 * file ("go1.21.5") says; an unreadable or unusual file is not taken as older. */
static bool go_before(const char *path, unsigned minor_wanted)
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
	return n == 2 && major == 1 && minor < minor_wanted;
}

/* The newest Go from 1.from on installed where scripts/lib/go-toolchains looks: Debian's
 * /usr/lib/go-1.NN, and the releases Debian bookworm lacks that scripts/setup unpacks into
 * $GT_GO_ROOT/1.NN (default /opt/gotrace-go); its go command in path, false when none. */
static bool newest_go(unsigned from, char *path, size_t size)
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
			if (minor >= from && minor > best && access(g.gl_pathv[i], X_OK) == 0) {
				best = minor;
				snprintf(path, size, "%s", g.gl_pathv[i]);
			}
		}
		globfree(&g);
	}
	return best != 0;
}

/* How to call a Go whose `go tool trace` reads fmt: "go" when it is on PATH (for a format
 * every later Go reads, unless its VERSION says it is older; otherwise not checked: the hint
 * says which one is needed), else an installed Go (for such a format the newest: its viewer
 * is the current one; else Debian's first that converts it, then its own), else NULL. */
static const char *go_command(const struct gt_trace_format_desc *fmt)
{
	static char path[PATH_MAX];
	if (gt_resolve_command("go", path, sizeof path) == 0 &&
	    (fmt->go_to || !go_before(path, fmt->go_from)))
		return "go";
	if (!fmt->go_to)
		return newest_go(fmt->go_from, path, sizeof path) ? path : NULL;
	unsigned minors[] = {fmt->go_converted_from, fmt->go_from};
	for (size_t k = 0; k < sizeof minors / sizeof minors[0]; k++) {
		snprintf(path, sizeof path, "/usr/lib/go-1.%u/bin/go", minors[k]);
		if (minors[k] && access(path, X_OK) == 0)
			return path;
	}
	return NULL;
}

/* The formats older readers read, for the hint after a trace only newer ones read: their
 * readers ("Go 1.19-1.21 or gotraceui v0.4") and names ("go1.19"), NULL when none. */
static const struct gt_trace_format_desc *older_format(const struct gt_trace_format_desc *fmt)
{
	for (int f = 0; f < GT_FORMAT_COUNT; f++)
		if (gt_trace_formats[f].go_to && gt_trace_formats[f].go_to < fmt->go_from)
			return &gt_trace_formats[f];
	return NULL;
}

void gt_cli_next_steps(const char *output, enum gt_trace_format format, bool kept)
{
	const struct gt_trace_format_desc *fmt = gt_trace_format_of(format);
	const struct gt_trace_format_desc *older = fmt->go_to ? NULL : older_format(fmt);
	const char *go = go_command(fmt);
	char readers[96], older_readers[96];
	format_readers(fmt, "or", ", ", readers, sizeof readers);
	if (older)
		format_readers(older, "or", " or ", older_readers, sizeof older_readers);
	if (go != NULL && older)
		fprintf(stderr, "gotrace: next: %s tool trace %s   (%s; for older readers, %s, use "
			"--format %s)\n", go, output, readers, older_readers, older->name);
	else if (go != NULL)
		fprintf(stderr, "gotrace: next: %s tool trace %s\n", go, output);
	else if (older)
		fprintf(stderr, "gotrace: next: go tool trace %s   (no Go found: apt install "
			"golang-1.23-go from bookworm-backports; %s reads this format, for older "
			"readers use --format %s)\n", output, readers, older->name);
	else
		fprintf(stderr, "gotrace: next: go tool trace %s   (no Go found: apt install "
			"golang-1.23-go from bookworm-backports)\n", output);
	if (kept)
		fprintf(stderr, "gotrace:       gotrace report %s   (no Go needed; from the kept "
			"capture)\n", output);
	else
		fprintf(stderr, "gotrace:       gotrace report %s   (no Go needed; --keep-capture "
			"adds lock names, fd kinds and syscall names)\n", output);
}
