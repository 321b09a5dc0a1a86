/* run_options: `gotrace run`'s usage and options (run.h). */
#include "run.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gotrace/last.h>

#define fail(...) gt_cli_fail("run", __VA_ARGS__)

#define DEFAULT_OUTPUT "gotrace.trace"
#define DEFAULT_CPU_SAMPLES_HZ 99u   /* not 100: no lockstep with 100 Hz timers */
#define MAX_CPU_SAMPLES_HZ 10000u

static const char run_usage[] =
	"usage: gotrace run [OPTIONS] [--] COMMAND [ARGS...]\n"
	"\n"
	"Run COMMAND with libgotrace.so preloaded, wait for it, and convert what it did into a\n"
	"Go execution trace for `go tool trace`.  Children that COMMAND starts are traced too:\n"
	"one trace holds every process, each thread a goroutine labelled \"prog[pid] name\".\n"
	"\n"
	"  -o, --output FILE       trace to write (default: " DEFAULT_OUTPUT ")\n"
	"      --stacks MODE       stack capture: unwind (libunwind, default), fp (frame\n"
	"                          pointers, faster), none\n"
	"      --stack-depth N     frames per stack, 1 to 128 (default 32)\n"
	"      --locks=contended|all  record the waits for contended locks (default), or\n"
	"                          every mutex and rwlock acquisition and release too:\n"
	"                          hold times, hold sites and lock-order inversions in\n"
	"                          `gotrace report` (about 45 ns more per lock+unlock)\n"
	"      --start-delay SEC   start recording SEC seconds after the command starts\n"
	"      --duration SEC      record for SEC seconds only (default: until it exits)\n"
	"      --last DURATION|SIZE  flight recorder: keep only the most recent window of\n"
	"                          each process, DURATION (30s, 500ms) or SIZE of records\n"
	"                          (64M, 1G), with the threads, names and blocked waits\n"
	"                          from before it; SIGUSR2 to gotrace then writes a\n"
	"                          snapshot FILE.snapshot-N while recording goes on\n"
	"      --hang SECONDS      hang watchdog: once every thread of a traced process has\n"
	"                          been blocked SECONDS (in a wait the hooks recorded, and\n"
	"                          off the CPU), write the run so far into FILE.hang-N and\n"
	"                          print what each thread waits for, who holds it and any\n"
	"                          deadlock; once per hang, the program runs on (decimals\n"
	"                          or 500ms; at least 0.1 s)\n"
	"      --no-follow         trace COMMAND's own process only (across exec), not its\n"
	"                          children\n"
	"      --per-process       one trace per process: FILE for the program COMMAND ended\n"
	"                          as, FILE.<pid> for the others, FILE.<pid>-<n> for a program\n"
	"                          image a process left by exec\n"
	"      --capture-dir DIR   write the raw captures into DIR (default: a fresh temporary\n"
	"                          directory)\n"
	"      --critical-path     what COMMAND's main thread waited for, end to end: after\n"
	"                          the summary by state, thread, function, lock and syscall\n"
	"                          (the top lines; all of it: gotrace report --critical-path),\n"
	"                          and in the trace a user task \"critical path\" with a region\n"
	"                          on each goroutine while the path is in it\n";
/* after the --format lines (gt_cli_format_help) */
static const char run_usage_tail[] =
	"      --keep-capture      keep the raw captures: as FILE.gtcap (and FILE.<pid>.gtcap)\n"
	"                          for `gotrace report FILE`, or in --capture-dir DIR.\n"
	"                          Without it they are removed after conversion, unless\n"
	"                          conversion fails\n"
	"      --max-capture SIZE  stop recording when the captures of the run hold SIZE\n"
	"                          together (e.g. 512M, 2G; K, M, G, T are powers of 1024);\n"
	"                          the program runs on.  Default: a quarter of the space\n"
	"                          free where the captures are written, at the start\n"
	"      --kernel=on|off     record the kernel's context switches of the traced tree\n"
	"                          (perf events, where permitted) into gotrace-<pid>.gtkern\n"
	"                          beside the captures.  Default off: each time a traced\n"
	"                          thread leaves its CPU and comes back costs about 1.3 us\n"
	"                          more with them, 2.5 us with CPU samples: a loopback server\n"
	"                          loses 15-25% of its requests/s, ~5% with hooks alone\n"
	"      --cpu-samples HZ|off  with kernel records, sample each thread's stack HZ\n"
	"                          times per second of its CPU time (default 99), written\n"
	"                          into the trace as CPU samples; a rate turns kernel\n"
	"                          records on\n"
	"      --offcpu-stacks     with kernel records (turns them on), the stack of every\n"
	"                          switch-out (needs perf_event_paranoid <= 1, CAP_PERFMON\n"
	"                          or root; costly on programs that switch often)\n"
	"  -h, --help              show this help\n"
	"\n"
	"gotrace waits for every traced process of the tree, daemons too.  Signals sent to\n"
	"gotrace (INT, TERM, HUP, QUIT, USR1, USR2 but with --last) are forwarded to COMMAND\n"
	"while it runs; once it has exited, INT or TERM stops the recording of the processes\n"
	"still running, writes the trace and leaves them running.\n"
	"Exit status: COMMAND's (128+N when it died of signal N); 1 when COMMAND succeeded but\n"
	"the trace could not be written; 125-127 when COMMAND could not be started.\n"
	"The GOTRACE_* environment variables of libgotrace.so apply too; see the README.\n";


/* ---- options ------------------------------------------------------------------------ */

enum {
	OPT_STACKS = 256, OPT_LOCKS, OPT_NO_FOLLOW, OPT_CAPTURE_DIR, OPT_KEEP_CAPTURE, OPT_STACK_DEPTH,
	OPT_START_DELAY, OPT_DURATION, OPT_PER_PROCESS, OPT_LAST, OPT_MAX_CAPTURE,
	OPT_KERNEL,
	OPT_CPU_SAMPLES,
	OPT_OFFCPU_STACKS,
	OPT_CRITICAL_PATH,
	OPT_HANG
};

enum { OPT_FORMAT = 512 };   /* the trace format: its own block */

/* Seconds as libgotrace.so reads them: digits with an optional fraction ("2", "0.5"). */
static bool is_seconds(const char *text)
{
	size_t whole = strspn(text, "0123456789"), frac = 0;
	const char *rest = text + whole;
	if (*rest == '.') {
		frac = strspn(rest + 1, "0123456789");
		rest += 1 + frac;
	}
	return whole + frac > 0 && whole <= 8 && *rest == '\0';
}

/* An option whose value is checked here: 0, or -1 once said why not. */
static int checked_option(int c, const char *optarg, struct run_options *opt)
{
	switch (c) {
	case OPT_STACKS:
		if (strcmp(optarg, "unwind") != 0 && strcmp(optarg, "fp") != 0 &&
		    strcmp(optarg, "none") != 0) {
			fail("--stacks must be unwind, fp or none, not '%s'", optarg);
			return -1;
		}
		opt->stacks = optarg;
		break;
	case OPT_LOCKS:
		if (strcmp(optarg, "contended") != 0 && strcmp(optarg, "all") != 0) {
			fail("--locks must be contended or all, not '%s'", optarg);
			return -1;
		}
		opt->locks = optarg;
		break;
	case OPT_STACK_DEPTH: {
		char *end;
		unsigned long depth = strtoul(optarg, &end, 10);
		if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || depth < 1 ||
		    depth > GT_MAX_STACK_DEPTH) {
			fail("--stack-depth must be a number of frames from 1 to %u, not '%s'",
			     GT_MAX_STACK_DEPTH, optarg);
			return -1;
		}
		opt->stack_depth = optarg;
		break;
	}
	case OPT_START_DELAY:
	case OPT_DURATION:
		if (!is_seconds(optarg)) {
			fail("--%s must be seconds (e.g. 2 or 0.5), not '%s'",
			     c == OPT_DURATION ? "duration" : "start-delay", optarg);
			return -1;
		}
		*(c == OPT_DURATION ? &opt->duration : &opt->start_delay) = optarg;
		break;
	case OPT_LAST: {
		uint64_t bytes, ns;
		if (!gt_parse_last(optarg, &bytes, &ns)) {
			fail("--last must be a duration (30s, 500ms) or a size (64M, 1G), not '%s'",
			     optarg);
			return -1;
		}
		opt->last = optarg;
		break;
	}
	case OPT_HANG:
		/* below a tick (hang.h), a hang could not be told from a pause */
		if (gt_cli_parse_duration(optarg, 1e9, &opt->hang_ns) != 0 ||
		    opt->hang_ns < 100000000u) {
			fail("--hang must be seconds of at least 0.1 (e.g. 10, 2.5 or 500ms), "
			     "not '%s'", optarg);
			return -1;
		}
		break;
	case OPT_MAX_CAPTURE:
		/* below a header and the smallest chunk, not one fact could be kept */
		if (gt_cli_parse_size(optarg, &opt->max_capture) != 0 ||
		    opt->max_capture < (64u << 10)) {
			fail("--max-capture must be a size of at least 64K (e.g. 512M or "
			     "2G), not '%s'", optarg);
			return -1;
		}
		break;
	}
	return 0;
}

int gt_run_parse_options(int argc, char **argv, struct run_options *opt)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "stacks", required_argument, NULL, OPT_STACKS },
		{ "locks", required_argument, NULL, OPT_LOCKS },
		{ "no-follow", no_argument, NULL, OPT_NO_FOLLOW },
		{ "capture-dir", required_argument, NULL, OPT_CAPTURE_DIR },
		{ "keep-capture", no_argument, NULL, OPT_KEEP_CAPTURE },
		{ "stack-depth", required_argument, NULL, OPT_STACK_DEPTH },
		{ "start-delay", required_argument, NULL, OPT_START_DELAY },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "per-process", no_argument, NULL, OPT_PER_PROCESS },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "last", required_argument, NULL, OPT_LAST },
		{ "max-capture", required_argument, NULL, OPT_MAX_CAPTURE },
		{ "kernel", required_argument, NULL, OPT_KERNEL },
		{ "cpu-samples", required_argument, NULL, OPT_CPU_SAMPLES },
		{ "offcpu-stacks", no_argument, NULL, OPT_OFFCPU_STACKS },
		{ "critical-path", no_argument, NULL, OPT_CRITICAL_PATH },
		{ "hang", required_argument, NULL, OPT_HANG },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* no kernel records unless asked: their cost on a server (--help, docs/usage.md) */
	*opt = (struct run_options){ .output = DEFAULT_OUTPUT, .no_kernel = true,
				     .cpu_samples = DEFAULT_CPU_SAMPLES_HZ };
	bool kernel_said = false;
	optind = 0; /* glibc: full re-initialisation, whatever parsed argv before */
	opterr = 0;
	/* '+': the first non-option is the command; its own options are not ours. */
	while ((c = getopt_long(argc, argv, "+:ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(run_usage, stdout);
			gt_cli_format_help(stdout, 26);
			fputs(run_usage_tail, stdout);
			return 0;
		case 'o':
			if (optarg[0] == '\0') {
				fail("empty output file name");
				return 2;
			}
			opt->output = optarg;
			break;
		case OPT_STACKS:
		case OPT_LOCKS:
		case OPT_STACK_DEPTH:
		case OPT_START_DELAY:
		case OPT_DURATION:
		case OPT_LAST:
		case OPT_HANG:
		case OPT_MAX_CAPTURE:
			if (checked_option(c, optarg, opt) != 0)
				return 2;
			break;
		case OPT_NO_FOLLOW:
			opt->no_follow = true;
			break;
		case OPT_CAPTURE_DIR:
			opt->capture_dir = optarg;
			break;
		case OPT_KEEP_CAPTURE:
			opt->keep_capture = true;
			break;
		case OPT_PER_PROCESS:
			opt->per_process = true;
			break;
		case OPT_FORMAT:
			opt->format_text = optarg;
			break;
		case OPT_KERNEL:
			if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
				fail("--kernel must be on or off, not '%s'", optarg);
				return 2;
			}
			opt->no_kernel = strcmp(optarg, "off") == 0;
			kernel_said = true;
			break;
		case OPT_CPU_SAMPLES: {
			/* the limit of cpu-clock in period mode is ours: keep the cost small (§9) */
			char *end;
			unsigned long hz = strcmp(optarg, "off") == 0 ? 0 : strtoul(optarg, &end, 10);
			if (strcmp(optarg, "off") != 0 &&
			    (end == optarg || *end != '\0' || hz > MAX_CPU_SAMPLES_HZ)) {
				fail("--cpu-samples must be a rate from 0 to %u (per second) or off, "
				     "not '%s'", MAX_CPU_SAMPLES_HZ, optarg);
				return 2;
			}
			opt->cpu_samples = (unsigned)hz;
			if (hz && !kernel_said)
				opt->no_kernel = false;
			break;
		}
		case OPT_OFFCPU_STACKS:
			opt->offcpu_stacks = true;
			if (!kernel_said)
				opt->no_kernel = false;
			break;
		case OPT_CRITICAL_PATH:
			opt->critical_path = true;
			break;
		default:
			return gt_cli_bad_option("run", c, argv);
		}
	}
	if (opt->critical_path && opt->per_process) {
		fail("--critical-path follows wakes across processes: it needs one trace, not "
		     "--per-process");
		return 2;
	}
	if (gt_cli_trace_format("run", opt->format_text, &opt->format) != 0)
		return 2;
	if (optind >= argc) {
		fail("no command given (usage: gotrace run [OPTIONS] -- COMMAND [ARGS...])");
		return 2;
	}
	opt->command = argv + optind;
	return -1;
}
