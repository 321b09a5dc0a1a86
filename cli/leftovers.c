/* leftovers: see leftovers.h. */
#include "leftovers.h"
#include "cli_common.h"
#include "trace_set.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Field 22 of /proc/PID/stat (clock ticks after boot when it started), 0 when it is gone. */
static unsigned long long start_ticks(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	for (int field = 2; p != NULL && *p != '\0' && field < 22; p++)
		field += *p == ' ';
	return p != NULL ? strtoull(p, NULL, 10) : 0;
}

int gt_leftovers_mark(const char *dir)
{
	char path[PATH_MAX + 16], line[64];
	snprintf(path, sizeof path, "%s/%s", dir, GT_RUN_MARK);
	int n = snprintf(line, sizeof line, "%ld %llu\n", (long)getpid(), start_ticks(getpid()));
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int ok = write(fd, line, (size_t)n) == n;
	close(fd);
	return ok ? 0 : -1;
}

void gt_leftovers_unmark(const char *dir)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/%s", dir, GT_RUN_MARK);
	unlink(path);
}

struct found {
	const char *dir;
	unsigned captures;
	unsigned long long bytes;
};

static void count_capture(const char *name, void *ctx)
{
	struct found *f = ctx;
	char path[2 * PATH_MAX];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", f->dir, name);
	if (stat(path, &st) == 0) {
		f->captures++;
		f->bytes += (unsigned long long)st.st_blocks * 512;
	}
}

/* DIR's mark names a gotrace that is gone: its pid; else 0 (no mark, or the run lives). */
static long dead_owner(const char *dir)
{
	char path[PATH_MAX + 16];
	long pid = 0;
	unsigned long long start = 0;
	snprintf(path, sizeof path, "%s/%s", dir, GT_RUN_MARK);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return 0;
	int got = fscanf(f, "%ld %llu", &pid, &start);
	fclose(f);
	if (got != 2 || pid <= 0)
		return 0;
	return start_ticks(pid) == start ? 0 : pid;
}

static void report_in(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char dir[PATH_MAX];
		struct stat st;
		if (strncmp(e->d_name, "gotrace-", 8) != 0 ||
		    snprintf(dir, sizeof dir, "%s/%s", parent, e->d_name) >= (int)sizeof dir ||
		    lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		long pid = dead_owner(dir);
		if (pid == 0)
			continue;
		struct found f = { dir, 0, 0 };
		gt_each_capture(dir, count_capture, &f);
		char size[32];
		gt_cli_format_size(f.bytes, size, sizeof size);
		fprintf(stderr, "gotrace: %s holds %u %s (%s) of a gotrace run (pid %ld) that was "
			"killed before it cleaned up; convert: gotrace convert %s -o FILE; remove: "
			"rm -r %s\n", dir, f.captures, f.captures == 1 ? "capture" : "captures", size,
			pid, dir, dir);
	}
	if (d != NULL)
		closedir(d);
}

void gt_leftovers_report(void)
{
	const char *tmp = getenv("TMPDIR");
	const char *parents[] = { tmp != NULL && tmp[0] != '\0' ? tmp : NULL, "/dev/shm", "/tmp" };
	char seen[3][PATH_MAX];
	for (int i = 0; i < 3; i++) {
		seen[i][0] = '\0';
		if (parents[i] == NULL || realpath(parents[i], seen[i]) == NULL)
			continue;
		bool again = false;
		for (int k = 0; k < i; k++)
			again |= strcmp(seen[k], seen[i]) == 0;
		if (!again)
			report_in(parents[i]);
	}
}
