/* `gotrace run`: start a command with libgotrace.so preloaded, wait for it, then convert
 * the captures of it and of every traced child into Go traces.
 *
 * Everything that would make the run useless is checked before the command starts: the
 * command exists and is executable, the dynamic loader will honour LD_PRELOAD for it (not
 * static, not setuid/setgid or with file capabilities), the library is found, the output
 * is writable.  While the command runs, gotrace only forwards signals and waits. */
#include "cli_common.h"
#include "commands.h"
#include "convert.h"
#include "follow.h"
#include "kernel_sched.h"
#include "one_trace.h"
#include "program_check.h"
#include "snapshot.h"
#include "trace_set.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gotrace/capture.h>
#include <gotrace/kernel_sched.h>
#include <gotrace/last.h>

#ifndef GT_PRELOAD_BUILD_RELPATH
#define GT_PRELOAD_BUILD_RELPATH "../preload/libgotrace.so"
#endif
#ifndef GT_PRELOAD_INSTALL_RELPATH
#define GT_PRELOAD_INSTALL_RELPATH "../lib/gotrace/libgotrace.so"
#endif

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
	"      --start-delay SEC   start recording SEC seconds after the command starts\n"
	"      --duration SEC      record for SEC seconds only (default: until it exits)\n"
	"      --last DURATION|SIZE  flight recorder: keep only the most recent window of\n"
	"                          each process, DURATION (30s, 500ms) or SIZE of records\n"
	"                          (64M, 1G), with the threads, names and blocked waits\n"
	"                          from before it; SIGUSR2 to gotrace then writes a\n"
	"                          snapshot FILE.snapshot-N while recording goes on\n"
	"      --no-follow         trace COMMAND's own process only (across exec), not its\n"
	"                          children\n"
	"      --per-process       one trace per process: FILE for the program COMMAND ended\n"
	"                          as, FILE.<pid> for the others, FILE.<pid>-<n> for a program\n"
	"                          image a process left by exec\n"
	"      --capture-dir DIR   write the raw captures into DIR (default: a fresh temporary\n"
	"                          directory)\n";
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
	"                          (perf events, where permitted; default on) into\n"
	"                          gotrace-<pid>.gtkern beside the captures\n"
	"      --cpu-samples HZ|off  with kernel records, sample each thread's stack HZ\n"
	"                          times per second of its CPU time (default 99), written\n"
	"                          into the trace as CPU samples\n"
	"      --offcpu-stacks     with kernel records, the stack of every switch-out\n"
	"                          (needs perf_event_paranoid <= 1, CAP_PERFMON or root;\n"
	"                          costly on programs that switch often)\n"
	"  -h, --help              show this help\n"
	"\n"
	"gotrace waits for every traced process of the tree, daemons too.  Signals sent to\n"
	"gotrace (INT, TERM, HUP, QUIT, USR1, USR2 but with --last) are forwarded to COMMAND\n"
	"while it runs; once it has exited, INT or TERM stops the recording of the processes\n"
	"still running, writes the trace and leaves them running.\n"
	"Exit status: COMMAND's (128+N when it died of signal N); 1 when COMMAND succeeded but\n"
	"the trace could not be written; 125-127 when COMMAND could not be started.\n"
	"The GOTRACE_* environment variables of libgotrace.so apply too; see the README.\n";


struct run_options {
	const char *output;
	const char *stacks;
	const char *capture_dir;
	const char *stack_depth, *start_delay, *duration; /* validated, passed on as given */
	const char *last;          /* --last, validated (gotrace/last.h) */
	bool no_follow;
	bool keep_capture;
	bool per_process;
	bool no_kernel;         /* --kernel=off */
	unsigned cpu_samples;   /* --cpu-samples HZ, 0: off */
	bool offcpu_stacks;     /* --offcpu-stacks */
	uint64_t max_capture;   /* --max-capture, 0: the default (max_capture_default) */
	char **command;
	enum gt_trace_format format;   /* --format, GOTRACE_FORMAT */
	const char *format_text;
};

#define fail(...) gt_cli_fail("run", __VA_ARGS__)

/* ---- options ------------------------------------------------------------------------ */

enum {
	OPT_STACKS = 256, OPT_NO_FOLLOW, OPT_CAPTURE_DIR, OPT_KEEP_CAPTURE, OPT_STACK_DEPTH,
	OPT_START_DELAY, OPT_DURATION, OPT_PER_PROCESS, OPT_LAST, OPT_MAX_CAPTURE,
	OPT_KERNEL,
	OPT_CPU_SAMPLES,
	OPT_OFFCPU_STACKS
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

/* Returns -1 to continue, or an exit status. */
static int parse_options(int argc, char **argv, struct run_options *opt)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "stacks", required_argument, NULL, OPT_STACKS },
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*opt = (struct run_options){ .output = DEFAULT_OUTPUT,
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
			if (strcmp(optarg, "unwind") != 0 && strcmp(optarg, "fp") != 0 &&
			    strcmp(optarg, "none") != 0) {
				fail("--stacks must be unwind, fp or none, not '%s'", optarg);
				return 2;
			}
			opt->stacks = optarg;
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
		case OPT_STACK_DEPTH: {
			char *end;
			unsigned long depth = strtoul(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || depth < 1 ||
			    depth > GT_MAX_STACK_DEPTH) {
				fail("--stack-depth must be a number of frames from 1 to %u, not '%s'",
				     GT_MAX_STACK_DEPTH, optarg);
				return 2;
			}
			opt->stack_depth = optarg;
			break;
		}
		case OPT_START_DELAY:
		case OPT_DURATION:
			if (!is_seconds(optarg)) {
				fail("--%s must be seconds (e.g. 2 or 0.5), not '%s'",
				     c == OPT_DURATION ? "duration" : "start-delay", optarg);
				return 2;
			}
			*(c == OPT_DURATION ? &opt->duration : &opt->start_delay) = optarg;
			break;
		case OPT_FORMAT:
			opt->format_text = optarg;
			break;
		case OPT_LAST: {
			uint64_t bytes, ns;
			if (!gt_parse_last(optarg, &bytes, &ns)) {
				fail("--last must be a duration (30s, 500ms) or a size (64M, 1G), not '%s'",
				     optarg);
				return 2;
			}
			opt->last = optarg;
			break;
		}
		case OPT_MAX_CAPTURE:
			/* below a header and the smallest chunk, not one fact could be kept */
			if (gt_cli_parse_size(optarg, &opt->max_capture) != 0 ||
			    opt->max_capture < (64u << 10)) {
				fail("--max-capture must be a size of at least 64K (e.g. 512M or "
				     "2G), not '%s'", optarg);
				return 2;
			}
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
		default:
			return gt_cli_bad_option("run", c, argv);
		}
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

/* ---- files ---------------------------------------------------------------------------- */

/* Can OUTPUT be written?  Checked before the command runs, so a long run is not wasted.
 * Leaves an existing file untouched and removes a file it had to create. */
static int check_writable(const char *output)
{
	int fd = open(output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd >= 0) {
		close(fd);
		unlink(output);
		return 0;
	}
	if (errno == EEXIST) {
		struct stat st;
		if (stat(output, &st) == 0 && S_ISDIR(st.st_mode)) {
			fail("cannot write %s: it is a directory", output);
			return -1;
		}
		fd = open(output, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
	}
	fail("cannot write %s: %s", output, strerror(errno));
	return -1;
}

static const char *self_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash == NULL)
		return NULL;
	*slash = '\0';
	return buf;
}

/* libgotrace.so next to this gotrace: in the build tree, or where `meson install` put it. */
static int find_preload_library(char *out, size_t size)
{
	char dir[PATH_MAX], candidate[2][PATH_MAX + 64];
	if (self_dir(dir, sizeof dir) == NULL) {
		fail("cannot find its own executable: %s", strerror(errno));
		return -1;
	}
	snprintf(candidate[0], sizeof candidate[0], "%s/%s", dir, GT_PRELOAD_BUILD_RELPATH);
	snprintf(candidate[1], sizeof candidate[1], "%s%s%s",
		 GT_PRELOAD_INSTALL_RELPATH[0] == '/' ? "" : dir,
		 GT_PRELOAD_INSTALL_RELPATH[0] == '/' ? "" : "/", GT_PRELOAD_INSTALL_RELPATH);
	for (int i = 0; i < 2; i++) {
		/* Absolute: the traced program may chdir before it starts children. */
		if (access(candidate[i], R_OK) == 0 && realpath(candidate[i], out) != NULL &&
		    strlen(out) < size)
			return 0;
	}
	fail("cannot find libgotrace.so (looked for %s and %s)", candidate[0], candidate[1]);
	return -1;
}

struct capture_dir {
	char path[PATH_MAX];
	bool created;         /* a temporary directory of ours: remove it when done */
	char **preexisting;   /* capture files already there before the run: not ours */
	size_t n_preexisting;
};

static void add_preexisting(const char *name, void *ctx)
{
	struct capture_dir *cd = ctx;
	cd->preexisting = realloc(cd->preexisting, (cd->n_preexisting + 1) * sizeof *cd->preexisting);
	cd->preexisting[cd->n_preexisting++] = strdup(name);
}

/* Where the fresh capture directory goes when the user named no place: TMPDIR when set, else
 * a tmpfs (/dev/shm) with room, else /tmp.  On a disk file system every capture costs its
 * process an inode and blocks, and gotrace their release (with the `discard` mount option,
 * a synchronous discard per file: on ext4 a shell loop of short processes ran 2.3x slower
 * than on a tmpfs).  A tmpfs keeps what a crashed or killed process committed just as well;
 * the captures take memory instead of disk until they are converted and removed.  Kept
 * captures move beside the trace, which rename() cannot do across file systems: those go to
 * /tmp as before. */
#define GT_TMPFS_MIN_FREE (1ull << 30)

static const char *default_capture_parent(bool keep)
{
	const char *tmp = getenv("TMPDIR");
	struct statfs fs;
	if (tmp != NULL && tmp[0] != '\0')
		return tmp;
	if (!keep && statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
	    (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize >= GT_TMPFS_MIN_FREE &&
	    access("/dev/shm", W_OK | X_OK) == 0)
		return "/dev/shm";
	return "/tmp";
}

static int prepare_capture_dir(struct capture_dir *cd, const char *requested, bool keep)
{
	*cd = (struct capture_dir){ 0 };
	if (requested == NULL) {
		snprintf(cd->path, sizeof cd->path, "%s/gotrace-XXXXXX", default_capture_parent(keep));
		if (mkdtemp(cd->path) == NULL) {
			fail("cannot create a capture directory %s: %s", cd->path, strerror(errno));
			return -1;
		}
		cd->created = true;
		/* others may enter, not list or create: a traced process that becomes another
		 * user makes uid-<uid> here (0700, that user's) for the programs it then runs;
		 * every capture stays 0600 */
		if (chmod(cd->path, 0711) != 0) {
			fail("cannot set the mode of %s: %s", cd->path, strerror(errno));
			return -1;
		}
		return 0;
	}
	if (mkdir(requested, 0777) != 0 && errno != EEXIST) {
		fail("cannot create capture directory %s: %s", requested, strerror(errno));
		return -1;
	}
	if (realpath(requested, cd->path) == NULL || access(cd->path, W_OK | X_OK) != 0) {
		fail("cannot write into capture directory %s: %s", requested, strerror(errno));
		return -1;
	}
	gt_each_capture(cd->path, add_preexisting, cd);
	return 0;
}

static bool was_preexisting(const struct capture_dir *cd, const char *name)
{
	for (size_t i = 0; i < cd->n_preexisting; i++)
		if (strcmp(cd->preexisting[i], name) == 0)
			return true;
	return false;
}

static pid_t child_pid;
static char kernel_file[PATH_MAX + 32];   /* the run's kernel scheduling records, or "" */

/* What the conversions draw the threads' CPUs from (NULL: the hooks alone). */
static const char *kernel_path(void)
{
	return kernel_file[0] != '\0' ? kernel_file : NULL;
}

static void set_env_var(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0)
		_exit(EXIT_GOTRACE_FAILED);
}

/* ---- the --max-capture bound ------------------------------------------------------------ */

/* A quarter of the space free in dir: the captures are the run's largest files, but the
 * traced program shares the disk (it must not meet a full disk because of us) and the trace
 * and a kept capture need room after them; the bound is said when it is reached. */
static uint64_t max_capture_default(const char *dir)
{
	struct statvfs fs;
	if (statvfs(dir, &fs) != 0)
		return 0; /* unknown: the file system's own limits apply */
	uint64_t quarter = (uint64_t)fs.f_bavail * fs.f_frsize / 4;
	return quarter > (64u << 10) ? quarter : 64u << 10;
}

/* GOTRACE_MAX_CAPTURE for the command: --max-capture, else what the user exported, else the
 * default.  The root process's count page (preload/capture_budget.c) is removed after the
 * run by budget_path's name. */
static void set_max_capture(const struct run_options *opt, const char *capture_dir)
{
	const char *exported = getenv("GOTRACE_MAX_CAPTURE");
	uint64_t bytes = opt->max_capture;
	if (!bytes && exported != NULL && exported[0] != '\0')
		return;
	if (!bytes)
		bytes = max_capture_default(capture_dir);
	if (!bytes) {
		unsetenv("GOTRACE_MAX_CAPTURE");
		return;
	}
	char text[24];
	snprintf(text, sizeof text, "%" PRIu64, bytes);
	set_env_var("GOTRACE_MAX_CAPTURE", text);
}

static void remove_budget_page(const char *capture_dir, pid_t root)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/gotrace-%d.budget", capture_dir, (int)root);
	unlink(path);
}

/* ---- running the command -------------------------------------------------------------- */


/* In the child, between fork and exec. */
static void prepare_child_env(const struct run_options *opt, const char *library,
			      const char *capture_dir)
{
	const char *old = getenv("LD_PRELOAD");
	if (old != NULL && old[0] != '\0') {
		size_t len = strlen(old) + 1 + strlen(library) + 1;
		char *both = malloc(len);
		if (both == NULL)
			_exit(EXIT_GOTRACE_FAILED);
		snprintf(both, len, "%s:%s", old, library);
		set_env_var("LD_PRELOAD", both);
	} else {
		set_env_var("LD_PRELOAD", library);
	}
	set_env_var("GOTRACE_CAPTURE_DIR", capture_dir);
	/* The library must only write captures: gotrace converts them afterwards. */
	unsetenv("GOTRACE_OUT");
	if (opt->stacks != NULL)
		set_env_var("GOTRACE_STACKS", opt->stacks);
	if (opt->no_follow) {
		/* the command's children know they are not it, even those started with its
		 * environment as it is (popen) */
		char pid[24];
		snprintf(pid, sizeof pid, "%d", (int)getpid());
		set_env_var("GOTRACE_FOLLOW", "0");
		set_env_var("GOTRACE_ROOT_PID", pid);
	}
	if (opt->stack_depth != NULL)
		set_env_var("GOTRACE_STACK_DEPTH", opt->stack_depth);
	if (opt->start_delay != NULL)
		set_env_var("GOTRACE_START_DELAY", opt->start_delay);
	if (opt->duration != NULL)
		set_env_var("GOTRACE_DURATION", opt->duration);
	if (opt->last != NULL)
		set_env_var("GOTRACE_LAST", opt->last);
	set_max_capture(opt, capture_dir);
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* SIGUSR2 under --last: the captures of this run so far, copied and converted into
 * OUTPUT.snapshot-N while the processes record on. */
struct snapshot_ctx {
	const struct run_options *opt;
	const struct capture_dir *cd;
	unsigned n;
	char **paths;
	size_t n_paths;
};

static void add_snapshot_capture(const char *name, void *ctx)
{
	struct snapshot_ctx *s = ctx;
	if (was_preexisting(s->cd, name))
		return;
	char path[2 * PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", s->cd->path, name);
	char **v = realloc(s->paths, (s->n_paths + 1) * sizeof *v);
	if (v != NULL && (v[s->n_paths] = strdup(path)) != NULL)
		s->n_paths++;
	s->paths = v;
}

static void snapshot_now(void *ctx)
{
	struct snapshot_ctx *s = ctx;
	s->n_paths = 0;
	gt_each_capture(s->cd->path, add_snapshot_capture, s);
	gt_snapshot_write(s->opt->output, ++s->n, (const char *const *)s->paths, s->n_paths, s->cd->path);
	for (size_t i = 0; i < s->n_paths; i++)
		free(s->paths[i]);
	free(s->paths);
	s->paths = NULL;
}

/* Starts the command; returns its wait status in *status, or an exit status when it could
 * not be started.  Waits for the whole traced tree (follow.c). */
static int run_command(const struct run_options *opt, const char *path, const char *library,
		       struct capture_dir *cd, struct gt_follow *follow, int *status)
{
	int exec_err_pipe[2], go_pipe[2];

	/* go_pipe: the child execs once the kernel's events are open on it */
	if (pipe2(exec_err_pipe, O_CLOEXEC) != 0 || pipe2(go_pipe, O_CLOEXEC) != 0) {
		fail("pipe: %s", strerror(errno));
		return EXIT_GOTRACE_FAILED;
	}
	fflush(NULL);
	/* Signals stay blocked (read by follow) from here on, so none is lost. */
	if (gt_follow_prepare(follow) != 0)
		return EXIT_GOTRACE_FAILED;

	pid_t pid = fork();
	if (pid < 0) {
		fail("fork: %s", strerror(errno));
		return EXIT_GOTRACE_FAILED;
	}
	if (pid == 0) {
		gt_follow_child(follow);
		close(exec_err_pipe[0]);
		close(go_pipe[1]);
		char go;
		while (read(go_pipe[0], &go, 1) < 0 && errno == EINTR)
			;
		prepare_child_env(opt, library, cd->path);
		execv(path, opt->command);
		int err = errno;
		if (write(exec_err_pipe[1], &err, sizeof err) < 0)
			_exit(EXIT_GOTRACE_FAILED);
		_exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE);
	}
	child_pid = pid;
	close(exec_err_pipe[1]);
	close(go_pipe[0]);
	struct gt_kernel_options ko = { .sample_hz = opt->cpu_samples,
					.offcpu_stacks = opt->offcpu_stacks };
	struct gt_kernel_rec *kernel = opt->no_kernel ? NULL : gt_kernel_start(pid, cd->path, &ko);
	close(go_pipe[1]);

	int exec_err = 0;
	ssize_t got;
	while ((got = read(exec_err_pipe[0], &exec_err, sizeof exec_err)) < 0 && errno == EINTR)
		;
	close(exec_err_pipe[0]);

	struct snapshot_ctx snap = { .opt = opt, .cd = cd };
	if (opt->last != NULL) {
		follow->on_usr2 = snapshot_now;
		follow->usr2_ctx = &snap;
	}
	int waited = gt_follow_wait(follow, pid, cd->path, cd->created, !opt->no_follow,
				    cd->preexisting, cd->n_preexisting, status);
	if (kernel != NULL) {
		gt_kernel_finish(kernel);
		/* in the directory follow may have renamed */
		snprintf(kernel_file, sizeof kernel_file, "%s/gotrace-%d" GT_KERNEL_SUFFIX,
			 cd->path, (int)pid);
	}
	if (waited != 0)
		return EXIT_GOTRACE_FAILED;
	if (got == (ssize_t)sizeof exec_err) {
		fail("cannot execute %s: %s", opt->command[0], strerror(exec_err));
		return exec_err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE;
	}
	return -1;
}

static int exit_status_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_GOTRACE_FAILED;
}

static void describe_status(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "was killed by signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, size, "ended with wait status %#x", status);
}

/* ---- conversion ----------------------------------------------------------------------- */

struct convert_result {
	uint64_t capture_bytes;
	struct gt_convert_summary sum;
};

/* Converts in this process, with the encoder library `gotrace convert` uses. */
static int convert_capture(const char *capture, const char *output, enum gt_trace_format format,
			   struct convert_result *r)
{
	struct gt_convert_options copt = { .format = format, .kernel_path = kernel_path() };
	char err[512];
	*r = (struct convert_result){ 0 };
	r->capture_bytes = gt_cli_capture_bytes(capture);
	struct gt_cli_progress progress;
	gt_cli_progress_start(&progress, output);
	copt.progress = gt_cli_progress_update;
	copt.progress_ctx = &progress;
	int rc = gt_convert_file(capture, output, &copt, &r->sum, err, sizeof err);
	gt_cli_progress_end(&progress);
	if (rc != 0) {
		fail("%s", err);
		return -1;
	}
	return 0;
}

/* ---- after the run: the captures ------------------------------------------------------- */

/* The captures this run produced ("gotrace-<pid>.gtcap", "gotrace-<pid>-<n>.gtcap" after
 * the n-th exec), identified and named by trace_set. */
struct run_captures {
	char **paths;
	struct gt_trace_image *img;   /* the command's own first, then by pid, images in order */
	size_t n;
	uint32_t main_pid;
};

static bool is_main(const struct run_captures *rc, size_t i)
{
	return rc->img[i].pid == rc->main_pid;
}

static int by_process(const void *a, const void *b, void *main_pid)
{
	const struct gt_trace_image *x = a, *y = b;
	uint32_t m = *(const uint32_t *)main_pid;
	bool xm = x->pid == m, ym = y->pid == m;
	if (xm != ym)
		return xm ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->generation < y->generation ? -1 : x->generation > y->generation;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (p == NULL) {
		fail("out of memory");
		exit(EXIT_GOTRACE_FAILED);
	}
	return p;
}

struct collecting {
	const struct capture_dir *cd;
	struct run_captures *rc;
	uint32_t *file_pid;
};

static void collect_one(const char *name, void *ctx)
{
	struct collecting *c = ctx;
	struct run_captures *rc = c->rc;
	if (was_preexisting(c->cd, name))
		return;
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	rc->paths = xrealloc(rc->paths, (rc->n + 1) * sizeof *rc->paths);
	c->file_pid = xrealloc(c->file_pid, (rc->n + 1) * sizeof *c->file_pid);
	size_t len = strlen(c->cd->path) + 1 + strlen(name) + 1;
	rc->paths[rc->n] = xrealloc(NULL, len);
	snprintf(rc->paths[rc->n], len, "%s/%s", c->cd->path, name);
	c->file_pid[rc->n] = (uint32_t)strtoul(base + 8, NULL, 10);
	rc->n++;
}

static void collect_captures(const struct capture_dir *cd, pid_t main_pid,
			     struct run_captures *rc)
{
	*rc = (struct run_captures){ .main_pid = (uint32_t)main_pid };
	struct collecting c = { cd, rc, NULL };
	gt_each_capture(cd->path, collect_one, &c);
	rc->img = xrealloc(NULL, (rc->n ? rc->n : 1) * sizeof *rc->img);
	gt_trace_images_identify(rc->img, rc->n, (const char *const *)rc->paths, c.file_pid);
	free(c.file_pid);
	if (rc->n > 1)
		qsort_r(rc->img, rc->n, sizeof *rc->img, by_process, &rc->main_pid);
}

static void free_captures(struct run_captures *rc)
{
	for (size_t i = 0; i < rc->n; i++)
		free(rc->paths[i]);
	free(rc->paths);
	free(rc->img);
}

static void remove_captures(const struct capture_dir *cd, const struct run_captures *rc)
{
	for (size_t i = 0; rc != NULL && i < rc->n; i++)
		unlink(rc->img[i].capture);
	if (kernel_file[0] != '\0')
		unlink(kernel_file);
	DIR *d = opendir(cd->path);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char sub[PATH_MAX + NAME_MAX + 2];
		if (!gt_is_user_dir(cd->path, e->d_name))
			continue;
		snprintf(sub, sizeof sub, "%s/%s", cd->path, e->d_name);
		rmdir(sub); /* emptied, unless it holds what is not ours */
	}
	if (d != NULL)
		closedir(d);
	if (cd->created && rmdir(cd->path) != 0)
		fprintf(stderr, "gotrace: left %s behind: %s\n", cd->path, strerror(errno));
}

static void print_conversion(const char *output, const struct gt_trace_image *cap,
			     const struct convert_result *r)
{
	char size[32];
	gt_cli_format_size(r->capture_bytes, size, sizeof size);
	/* an image its pid left by exec (a later one exists) did not crash: it ended there */
	fprintf(stderr, "gotrace: %s: %s (pid %u%s), %" PRIu64 " threads, %" PRIu64 " events "
		"(capture %s, converted in %.2f s)\n", output,
		r->sum.process[0] ? r->sum.process : cap->command, cap->pid,
		cap->last ? "" : ", then exec'd another program", r->sum.model.threads,
		r->sum.wire.events, size, r->sum.seconds);
	gt_cli_viewer_warning(output, r->sum.wire.events);
	gt_cli_print_capture_problems(&r->sum, "");
	if (cap->detached && cap->last)
		fprintf(stderr, "gotrace:   pid %u keeps running untraced: the trace ends where "
			"gotrace stopped its recording\n", cap->pid);
	else if (!cap->finalized && cap->last)
		fprintf(stderr, "gotrace:   pid %u did not finish normally (killed, crashed or "
			"still running): the trace ends at its last recorded fact\n", cap->pid);
}

/* A conversion of --per-process in a child process: its result through a pipe. */
struct convert_job {
	pid_t pid;
	int fd;
};

static struct convert_job start_conversion(const char *capture, const char *output,
					   enum gt_trace_format format)
{
	struct convert_job j = { -1, -1 };
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return j;
	fflush(NULL);
	j.pid = fork();
	if (j.pid == 0) {
		close(fds[0]);
		struct { int ok; struct convert_result r; } out;
		struct gt_convert_options copt = { .format = format, .kernel_path = kernel_path() };
		char err[512];
		out.r = (struct convert_result){ .capture_bytes = gt_cli_capture_bytes(capture) };
		out.ok = gt_convert_file(capture, output, &copt, &out.r.sum, err, sizeof err) == 0;
		if (!out.ok)
			fail("%s", err);
		fflush(stderr);
		_exit(write(fds[1], &out, sizeof out) == (ssize_t)sizeof out ? 0 : 1);
	}
	close(fds[1]);
	if (j.pid < 0) {
		close(fds[0]);
		return j;
	}
	j.fd = fds[0];
	return j;
}

static bool finish_conversion(struct convert_job *j, struct convert_result *r)
{
	struct { int ok; struct convert_result r; } in = { 0 };
	size_t got = 0;
	ssize_t n;
	while (got < sizeof in && (n = read(j->fd, (char *)&in + got, sizeof in - got)) != 0) {
		if (n < 0 && errno != EINTR)
			break;
		got += n > 0 ? (size_t)n : 0;
	}
	close(j->fd);
	while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
		;
	*r = in.r;
	return got == sizeof in && in.ok;
}

/* --per-process: a trace per capture, converted by as many child processes at once as
 * there are CPUs (a tree of many processes converts on all of them), reported in order. */
static void convert_per_process(const struct run_options *opt, const struct run_captures *rc,
				bool *all_ok)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t width = cpus > 1 ? (size_t)cpus : 1;
	struct convert_job *jobs = xrealloc(NULL, (rc->n ? rc->n : 1) * sizeof *jobs);
	char (*outputs)[PATH_MAX + 64] = xrealloc(NULL, (rc->n ? rc->n : 1) * sizeof *outputs);
	size_t started = 0;
	for (size_t i = 0; i < rc->n; i++) {
		/* a child's capture is not converted with --no-follow */
		bool skip = opt->no_follow && !is_main(rc, i);
		for (; started < rc->n && started < i + width; started++) {
			jobs[started] = (struct convert_job){ -1, -1 };
			if (opt->no_follow && !is_main(rc, started))
				continue;
			gt_trace_image_name(opt->output, &rc->img[started], rc->main_pid, "",
					    outputs[started], sizeof outputs[started]);
			jobs[started] = start_conversion(rc->img[started].capture, outputs[started],
							 opt->format);
		}
		if (skip)
			continue;
		struct convert_result r;
		bool ok;
		if (jobs[i].pid < 0) /* no child to spare: here, with the progress bar */
			ok = convert_capture(rc->img[i].capture, outputs[i], opt->format, &r) == 0;
		else
			ok = finish_conversion(&jobs[i], &r);
		if (!ok) {
			*all_ok = false;
			continue;
		}
		print_conversion(outputs[i], &rc->img[i], &r);
	}
	free(outputs);
	free(jobs);
}

static void convert_all(const struct run_options *opt, const struct run_captures *rc,
			bool *all_ok)
{
	*all_ok = true;
	if (rc->n == 0 || !is_main(rc, 0)) {
		fail("pid %d wrote no capture: libgotrace.so did not load into it or was "
		     "disabled (see its messages above)", (int)child_pid);
		*all_ok = false;
	}
	if (!opt->per_process) {
		/* one trace: every capture of the run (the command's own alone with --no-follow) */
		const char **paths = xrealloc(NULL, (rc->n ? rc->n : 1) * sizeof *paths);
		size_t n = 0;
		for (size_t i = 0; i < rc->n; i++)
			if (!opt->no_follow || is_main(rc, i))
				paths[n++] = rc->img[i].capture;
		struct gt_convert_options copt = { .format = opt->format,
						   .kernel_path = kernel_path() };
		if (n && gt_one_trace("run", opt->output, paths, n, &copt, GT_SUMMARY_RUN) != 0)
			*all_ok = false;
		free(paths);
		return;
	}
	convert_per_process(opt, rc, all_ok);
}

/* --keep-capture without --capture-dir: the captures move next to the traces, as
 * FILE.gtcap and FILE.<pid>.gtcap, where `gotrace report FILE` finds them.  Returns
 * whether the command's own capture got there. */
static bool keep_beside_output(const struct run_options *opt, const struct capture_dir *cd,
			       const struct run_captures *rc)
{
	bool main_kept = false, left = false;
	for (size_t i = 0; i < rc->n; i++) {
		char target[PATH_MAX + 64];
		const struct gt_trace_image *cap = &rc->img[i];
		gt_trace_image_name(opt->output, cap, rc->main_pid, ".gtcap", target, sizeof target);
		if (rename(cap->capture, target) == 0) {
			main_kept |= is_main(rc, i) && cap->last;
			fprintf(stderr, "gotrace: capture kept as %s\n", target);
		} else {
			/* Another file system (EXDEV): a capture may be large, leave it be. */
			fprintf(stderr, "gotrace: capture kept as %s (cannot move it to %s: %s)\n",
				cap->capture, target, strerror(errno));
			left = true;
		}
	}
	if (kernel_file[0] != '\0') {
		char target[PATH_MAX + 16];
		snprintf(target, sizeof target, "%s" GT_KERNEL_SUFFIX, opt->output);
		if (rename(kernel_file, target) == 0)
			fprintf(stderr, "gotrace: kernel records kept as %s\n", target);
		else
			left = true;
	}
	if (!left && cd->created)
		rmdir(cd->path);
	return main_kept;
}

int gt_cmd_run(int argc, char **argv)
{
	struct run_options opt;
	int ret = parse_options(argc, argv, &opt);
	if (ret >= 0)
		return ret;

	char path[PATH_MAX], library[PATH_MAX];
	int err = gt_resolve_command(opt.command[0], path, sizeof path);
	if (err != 0) {
		if (err == ENOENT && strchr(opt.command[0], '/') == NULL)
			fail("command not found: %s", opt.command[0]);
		else
			fail("%s: %s", opt.command[0], strerror(err));
		return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE;
	}
	if ((ret = gt_check_program(opt.command[0], path)) != 0)
		return ret;
	if (check_writable(opt.output) != 0 || find_preload_library(library, sizeof library) != 0)
		return EXIT_GOTRACE_FAILED;
	struct capture_dir cd;
	if (prepare_capture_dir(&cd, opt.capture_dir, opt.keep_capture) != 0)
		return EXIT_GOTRACE_FAILED;

	double started = now_seconds();
	int status;
	struct gt_follow follow;
	ret = run_command(&opt, path, library, &cd, &follow, &status);
	remove_budget_page(cd.path, child_pid);
	if (ret >= 0) {
		remove_captures(&cd, NULL);
		return ret;
	}
	double ran = follow.command_ended - started;
	char how[128];
	describe_status(status, how, sizeof how);
	fprintf(stderr, "gotrace: %s %s after %.2f s\n", opt.command[0], how, ran);

	struct run_captures rc;
	collect_captures(&cd, (pid_t)child_pid, &rc);
	bool all_ok;
	convert_all(&opt, &rc, &all_ok);
	if (kernel_file[0] != '\0')
		gt_kernel_print_summary(kernel_file);
	bool kept_beside = false;
	if (all_ok && opt.keep_capture && opt.capture_dir == NULL)
		kept_beside = keep_beside_output(&opt, &cd, &rc);
	else if (all_ok && !opt.keep_capture)
		remove_captures(&cd, &rc);
	else if (rc.n > 0)
		fprintf(stderr, "gotrace: %s kept in %s%s\n", rc.n == 1 ? "capture" : "captures",
			cd.path, all_ok ? "" : " (convert again with: gotrace convert CAPTURE -o FILE)");
	if (all_ok)
		gt_cli_next_steps(opt.output, opt.format, kept_beside);
	free_captures(&rc);
	for (size_t i = 0; i < cd.n_preexisting; i++)
		free(cd.preexisting[i]);
	free(cd.preexisting);
	gt_follow_end(&follow);

	int command_status = exit_status_of(status);
	return command_status == 0 && !all_ok ? 1 : command_status;
}
