/* For target programs: the descriptors this process holds, as /proc/self/fd shows them, so a
 * test compares the traced program's set with the untraced one's. */
#ifndef GT_TARGET_FD_LIST_H
#define GT_TARGET_FD_LIST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Calls each(fd, target of its link) for every descriptor but the listing's own; returns how
 * many, or -1 when /proc/self/fd cannot be read (errno set). */
static inline int gt_fd_list(void (*each)(int fd, const char *what))
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	struct dirent *e;
	int mine = dirfd(d), n = 0;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd == mine)
			continue;
		char link[64], what[512] = "";
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t k = readlink(link, what, sizeof what - 1);
		what[k > 0 ? k : 0] = 0;
		each(fd, what);
		n++;
	}
	closedir(d);
	return n;
}

#endif
