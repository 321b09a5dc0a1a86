/* GOTRACE_* environment: parsed once per program image.  A malformed value costs one line on
 * stderr and the default. */
#include "config.h"

#include "gotrace/last.h"

#include <stdlib.h>
#include <string.h>

struct gt_config gt_cfg;

/* "1.5" seconds -> ns; no locale, no strtod (this may run before main). */
static int parse_seconds(const char *s, uint64_t *ns)
{
	uint64_t whole = 0, frac = 0, scale = 1000000000ull;
	const char *p = s;
	int digits = 0;
	while (*p >= '0' && *p <= '9') {
		whole = whole * 10 + (uint64_t)(*p++ - '0');
		if (whole > 100000000ull)
			return 0;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
			p++;
			digits++;
		}
	}
	if (!digits || *p)
		return 0;
	*ns = whole * 1000000000ull + frac;
	return 1;
}

static int parse_uint(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || x > (UINT64_MAX - 9) / 10)
			return 0;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	return 1;
}

/* "512M", "1G", "1GiB", "4096": bytes, with a binary K/M/G/T suffix; 0 when malformed */
static uint64_t parse_size(const char *s)
{
	uint64_t v = 0;
	const char *p = s;
	while (*p >= '0' && *p <= '9') {
		if (v > (1ull << 50))
			return 0;
		v = v * 10 + (uint64_t)(*p++ - '0');
	}
	if (p == s)
		return 0;
	static const char units[] = "KMGT";
	for (int i = 0; units[i]; i++) {
		if (*p == units[i] || *p == units[i] + 'a' - 'A') {
			v <<= 10 * (i + 1);
			p++;
			if (p[0] == 'i' && p[1] == 'B')
				p += 2;
			break;
		}
	}
	if (*p == 'B')
		p++;
	return *p || v >= (1ull << 62) ? 0 : v;
}

static void bad(const char *var, const char *value, const char *expected)
{
	char what[160];
	size_t n = 0;
	for (const char *p = var; *p && n < 60; p++)
		what[n++] = *p;
	what[n++] = '=';
	for (const char *p = value; *p && n < 120; p++)
		what[n++] = *p;
	what[n] = 0;
	gt_warn(what, ": ", expected);
}

/* path ("" = the directory itself) against the directory the program starts in, into out:
 * the program may change directory before the capture is created or converted.  Children it
 * execs from elsewhere get the absolute form in their environment (child_env.c), the program
 * keeps its own.  0 when it does not fit. */
static int absolute_path(const char *path, char *out, size_t cap)
{
	size_t n = 0, len = strlen(path);
	if (path[0] != '/') {
		long r = gt_sys2(SYS_getcwd, out, cap);
		if (r <= 0 || out[0] != '/')
			return 0;
		n = strlen(out);
		if (len && out[n - 1] != '/' && n + 1 < cap)
			out[n++] = '/';
	}
	if (n + len >= cap)
		return 0;
	memcpy(out + n, path, len + 1);
	return 1;
}

void gt_config_load(void)
{
	static char out[GT_PATH_MAX];
	const char *v;
	uint64_t x;

	gt_cfg.out = NULL;
	v = getenv("GOTRACE_OUT");
	if (v && *v) {
		if (absolute_path(v, out, sizeof out))
			gt_cfg.out = out;
		else
			bad("GOTRACE_OUT", "...", "path too long; no trace at exit");
	}

	v = getenv("GOTRACE_RUN");
	gt_cfg.under_run = v && !strcmp(v, "1");

	/* room for "/gotrace-<pid>-<n>.gtcap" */
	gt_cfg.capture_dir[0] = 0;
	v = getenv("GOTRACE_CAPTURE_DIR");
	if (!absolute_path(v ? v : "", gt_cfg.capture_dir,
			   sizeof gt_cfg.capture_dir - 64)) {
		gt_cfg.capture_dir[0] = 0;
		if (v && *v && strlen(v) < sizeof gt_cfg.capture_dir - 64)
			strcpy(gt_cfg.capture_dir, v);
		else if (v && *v)
			bad("GOTRACE_CAPTURE_DIR", "...", "path too long; using the current directory");
	}

	gt_cfg.stack_mode = GT_STACKS_UNWIND;
	v = getenv("GOTRACE_STACKS");
	if (v && *v) {
		if (!strcmp(v, "unwind"))
			gt_cfg.stack_mode = GT_STACKS_UNWIND;
		else if (!strcmp(v, "fp"))
			gt_cfg.stack_mode = GT_STACKS_FP;
		else if (!strcmp(v, "none"))
			gt_cfg.stack_mode = GT_STACKS_NONE;
		else
			bad("GOTRACE_STACKS", v, "expected unwind, fp or none; using unwind");
	}

	v = getenv("GOTRACE_LOCKS");
	gt_cfg.locks_all = 0;
	if (v && *v) {
		if (!strcmp(v, "all"))
			gt_cfg.locks_all = 1;
		else if (strcmp(v, "contended"))
			bad("GOTRACE_LOCKS", v, "expected contended or all; using contended");
	}

	gt_cfg.stack_depth = 32;
	v = getenv("GOTRACE_STACK_DEPTH");
	if (v && *v) {
		if (parse_uint(v, &x) && x >= 1 && x <= GT_MAX_STACK_DEPTH)
			gt_cfg.stack_depth = (uint32_t)x;
		else
			bad("GOTRACE_STACK_DEPTH", v, "expected an integer from 1 to 128; using 32");
	}

	gt_cfg.start_delay_ns = 0;
	v = getenv("GOTRACE_START_DELAY");
	if (v && *v && !parse_seconds(v, &gt_cfg.start_delay_ns)) {
		gt_cfg.start_delay_ns = 0;
		bad("GOTRACE_START_DELAY", v, "expected seconds (e.g. 2 or 0.5); using 0");
	}

	gt_cfg.duration_ns = 0;
	v = getenv("GOTRACE_DURATION");
	if (v && *v && !parse_seconds(v, &gt_cfg.duration_ns)) {
		gt_cfg.duration_ns = 0;
		bad("GOTRACE_DURATION", v, "expected seconds (e.g. 10 or 2.5); tracing until exit");
	}

	gt_cfg.follow = 1;
	v = getenv("GOTRACE_FOLLOW");
	if (v && *v) {
		if (!strcmp(v, "0"))
			gt_cfg.follow = 0;
		else if (!strcmp(v, "1"))
			gt_cfg.follow = 1;
		else
			bad("GOTRACE_FOLLOW", v, "expected 0 or 1; using 1");
	}

	/* A test knob: every stack libunwind walks from the hook's frame is walked again
	 * through all the tracer's frames and the two compared (stacks.c). */
	gt_cfg.stack_check = 0;
	v = getenv("GOTRACE_STACK_CHECK");
	if (v && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "1"))
			gt_cfg.stack_check = *v == '1';
		else
			bad("GOTRACE_STACK_CHECK", v, "expected 0 or 1; using 0");
	}

	/* A test knob rather than a user one: lets tests exercise chunk turnover and file growth. */
	gt_cfg.chunk_size = 1u << 20;
	v = getenv("GOTRACE_CHUNK_SIZE");
	if (v && *v) {
		if (parse_uint(v, &x) && x >= 16384 && x <= (1u << 30) && x % 4096 == 0)
			gt_cfg.chunk_size = (uint32_t)x;
		else
			bad("GOTRACE_CHUNK_SIZE", v, "expected a multiple of 4096 from 16384 to 1 GiB; using 1 MiB");
	}

	v = getenv("GOTRACE_LAST");
	if (v && *v && !gt_parse_last(v, &gt_cfg.last_bytes, &gt_cfg.last_ns))
		bad("GOTRACE_LAST", v, "expected a duration (30s, 500ms) or a size (64M, 1G); keeping everything");
	gt_cfg.max_capture = 0;
	v = getenv("GOTRACE_MAX_CAPTURE");
	if (v && *v && !(gt_cfg.max_capture = parse_size(v)))
		bad("GOTRACE_MAX_CAPTURE", v, "expected bytes with K, M, G or T (e.g. 512M); no bound");

	/* The TSC rate a traced ancestor measured (child_env.c passes it on): one measurement of
	 * 0.5 ms per run instead of one per process.  Out of range: measured again. */
	gt_cfg.tsc_hz = 0;
	v = getenv("GOTRACE_TSC_HZ");
	if (v && *v && parse_uint(v, &x) && x >= 100000000u && x <= 100000000000ull)
		gt_cfg.tsc_hz = x;

	gt_cfg.reaper = gt_cfg.adopter = gt_cfg.is_command = 0;
	v = getenv("GOTRACE_REAPER");
	if (v) {
		char *end;
		long r = strtol(v, &end, 10), a = *end == ':' ? strtol(end + 1, &end, 10) : 0;
		long c = *end == ':' ? strtol(end + 1, &end, 10) : 0;
		if (!*end && r > 0 && a > 0 && c > 0) {
			gt_cfg.reaper = (int)r, gt_cfg.adopter = (int)a;
			gt_cfg.is_command = c == gt_sys0(SYS_getpid);
		}
	}

	/* The first traced process is the root.  Its children learn its pid from the environment
	 * their exec or spawn gets (child_env.c), never from ours: the program's stays its own. */
	char pidbuf[24];
	pidbuf[gt_fmt_u64(pidbuf, (uint64_t)gt_sys0(SYS_getpid))] = 0;
	v = getenv("GOTRACE_ROOT_PID");
	if (!v || !*v || strlen(v) >= sizeof gt_cfg.root_pid)
		v = pidbuf;
	gt_cfg.is_root = !strcmp(v, pidbuf);
	strcpy(gt_cfg.root_pid, v);
}
