/* Running the gotrace command from Criterion tests: argv in, exit status and both output
 * streams out.  Paths of the binaries under test come from meson (cli_paths below). */
#ifndef GT_TESTS_CLI_SUPPORT_H
#define GT_TESTS_CLI_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct cli_result {
	int status;       /* exit status; 128+N when killed by signal N */
	char *out, *err;  /* NUL-terminated, malloc'd */
};

/* Runs argv (argv[0] is a path) with extra "NAME=VALUE" (or "NAME" to unset) environment
 * entries, NULL-terminated (env may be NULL).  Fails the test if it cannot run. */
void cli_run(struct cli_result *r, const char *const *argv, const char *const *env);
/* cli_run, but once stdout or stderr holds needle, the output is read watch_s seconds more
 * and sig is then sent to the child: `timeout`'s SIGALRM stops the command as its time
 * running out would (status 124), so that a run ends as soon as what it is for was seen. */
void cli_run_until(struct cli_result *r, const char *const *argv, const char *const *env,
		   const char *needle, double watch_s, int sig);
void cli_result_free(struct cli_result *r);

/* Number of times needle occurs in text. */
size_t cli_count_of(const char *text, const char *needle);

/* Number of lines in text (a last line without '\n' counts). */
size_t cli_count_lines(const char *text);

/* A fresh directory for one test, under the build tree; removed with what it holds when
 * the test ends. */
void cli_tempdir(char *out, size_t size);

/* Writes "<dir>/<name>" into out and returns out. */
char *cli_path(char *out, size_t size, const char *dir, const char *name);

bool cli_file_exists(const char *path);
/* The whole of the file at path (malloc'd, NUL-terminated), NULL when it cannot be read. */
char *cli_read_file(const char *path);

/* Creates "<dir>/<name>" holding text (mode 0644); its path goes into out. */
void cli_write_file(char *out, size_t size, const char *dir, const char *name, const char *text);

/* `gotrace run --keep-capture -o DIR/workpool.trace -- workpool JOBS 4`, asserting success;
 * the trace path is written into trace. */
void cli_trace_workpool(const char *dir, unsigned jobs, char *trace, size_t size);

/* Waits (up to 20 s) until PARENT has a child running the program named COMM (as
 * /proc/PID/comm shows it), and returns its pid; fails the test otherwise.  Signals sent
 * to a `gotrace run` before then could reach it before its handlers are in place. */
pid_t cli_wait_for_child(pid_t parent, const char *comm);

/* In a child before exec: no signal blocked, every disposition the default, as at a
 * terminal (a suite started as a background job of a script inherits SIGINT and SIGQUIT
 * ignored: POSIX shells do that without job control). */
void cli_default_signals(void);

/* The source line of the first line of examples/workpool.c containing needle. */
unsigned cli_workpool_line(const char *needle);
/* The same in the source file at path. */
unsigned cli_source_line(const char *source, const char *needle);

/* `gotrace report [--json] TRACE`'s output (malloc'd), asserting it succeeded. */
char *cli_report_of(const char *trace, bool json);
/* Runs check_report_json.py on the workpool report at json_path (with extra_args after its
 * lock line, "" for none), asserting it says "ok". */
void cli_check_report_json(const char *json_path, const char *extra_args);

/* Load for a test's "under load" variant: one busy child per CPU when on, else none;
 * cli_load_stop ends them. */
struct cli_load {
	pid_t pids[64];
	int n;
};
void cli_load_start(struct cli_load *l, bool on);
void cli_load_stop(struct cli_load *l);

extern const char cli_gotrace[], cli_workpool[], cli_static_program[], cli_workpool_source[];

#endif
