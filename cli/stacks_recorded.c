/* stacks_recorded: the capture of a live process gotrace was loaded into, found from the
 * process's mappings (the recorder keeps its capture's header and chunks mapped) and read
 * as gotrace run --hang reads one: a consistent copy (snapshot.c), the report's waits. */
#include "stacks_recorded.h"

#include <gotrace/capture.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "report/report.h"
#include "snapshot.h"

/* Whether path is a capture whose header names pid. */
static bool capture_of(const char *path, pid_t pid)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct gt_file_header h;
	bool read_it = fd >= 0 && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h;
	if (fd >= 0)
		close(fd);
	return read_it && memcmp(h.magic, GT_CAPTURE_MAGIC, sizeof h.magic) == 0 &&
	       h.pid == (uint32_t)pid;
}

/* The capture pid maps, into path; false when none (gotrace is not loaded in it). */
static bool find_capture(pid_t pid, char *path, size_t size)
{
	char maps[64], line[PATH_MAX + 128];
	snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(maps, "re");
	bool found = false;
	while (f && !found && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		const char *file = strchr(line, '/');
		size_t len = file ? strlen(file) : 0;
		if (len > 6 && !strcmp(file + len - 6, ".gtcap") && capture_of(file, pid)) {
			snprintf(path, size, "%s", file);
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

void gt_stacks_recorded(FILE *out, pid_t pid, uint64_t now_mono_ns)
{
	char capture[PATH_MAX], beside[PATH_MAX];
	if (!find_capture(pid, capture, sizeof capture))
		return;
	const char *tmp = getenv("TMPDIR");
	snprintf(beside, sizeof beside, "%s/gotrace-stacks-%d", tmp && *tmp ? tmp : "/tmp",
		 (int)getpid());
	struct gt_snapshot snap;
	if (gt_snapshot_begin(&snap, "stacks", beside) != 0)
		return;
	const char *copy = gt_snapshot_add(&snap, capture);
	fprintf(out, "\nRecorded by gotrace, loaded in process %d (capture %s):\n", (int)pid,
		capture);
	struct gt_report_options ropt = {.waits_only = true, .live_now_mono_ns = now_mono_ns};
	char err[256] = "it is gone";
	if (!copy || gt_report_capture(copy, &ropt, out, err, sizeof err) != 0)
		fprintf(out, "  the capture cannot be read: %s\n", err);
	gt_snapshot_end(&snap);
}
