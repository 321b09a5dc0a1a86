/* recorder: `gotrace run` records the kernel's scheduling facts of the traced tree
 * (issue 15, docs/formats/kernel-records.md): per-CPU inherited perf events opened on the
 * command between fork and exec, drained by a thread of gotrace into gotrace-<pid>.gtkern
 * (records.h) beside the captures.  The fds are gotrace's (CLOEXEC):
 * the command never has them.  Where perf is refused, one line says what is missing and how
 * to enable it, and the run goes on from the hooks alone. */
#ifndef GOTRACE_KERNEL_RECORDER_H
#define GOTRACE_KERNEL_RECORDER_H

#include <stdbool.h>
#include <sys/types.h>

struct gt_kernel_rec;

struct gt_kernel_options {
	unsigned sample_hz;     /* cpu-clock samples per second of CPU time; 0: none */
	bool offcpu_stacks;     /* a sample at every switch-out */
};

/* Opens the events on PID (stopped before its exec) and starts draining them into
 * DIR/gotrace-<pid>.gtkern.  NULL, after one line on stderr, when perf is refused; a
 * sampling event refused says so in one line of its own and the switches are recorded. */
struct gt_kernel_rec *gt_kernel_start(pid_t pid, const char *dir,
				      const struct gt_kernel_options *opt);

/* After the whole tree has exited: the last records, the file finished, the fds closed. */
void gt_kernel_finish(struct gt_kernel_rec *k);

/* "gotrace: kernel: N context switches recorded (P preempted), M lost" for the file at PATH
 * (or what is wrong with it), on stderr.  They are counted, not drawn yet (issue 15). */
void gt_kernel_print_summary(const char *path);

#endif
