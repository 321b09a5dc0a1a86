/* Process-shared synchronisation objects named by their kernel identity (capture.h,
 * GT_OBJ_KERNEL): the object, file or shmem, that the memory maps and the offset in it, the
 * same in every process that maps it, wherever it maps it.  Only slow paths ask (a wait that
 * blocks, a release that finds waiters), and only for objects marked process-shared. */
#include "shared_objs.h"
#include "files_apart.h"

#include <fcntl.h>

/* One line of /proc/self/maps, "start-end perms offset major:minor inode path", parsed as it
 * streams by.  Fields: 0 start, 1 end, 2 perms, 3 offset, 4 major, 5 minor, 6 inode, 7 path. */
struct maps_line {
	uint64_t v[7];
	unsigned field, digits;
	int shared;                /* perms' fourth letter is 's' */
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Feeds one character; returns 1 at the end of a line. */
static int maps_feed(struct maps_line *l, char c)
{
	if (c == '\n')
		return 1;
	if (l->field > 6)
		return 0;
	if (l->field == 2) {
		if (c == ' ') {
			l->field = 3;
			l->digits = 0;
		} else if (++l->digits == 4) {
			l->shared = c == 's';
		}
		return 0;
	}
	if (c == '-' || c == ' ' || c == ':') {
		if (l->digits) {
			l->field++;
			l->digits = 0;
		}
		return 0;
	}
	int d = hexval(c);
	if (d >= 0) {
		l->v[l->field] = l->v[l->field] * (l->field == 6 ? 10 : 16) + (uint64_t)d;
		l->digits++;
	}
	return 0;
}

/* The key of the memory at addr, read in a thread with a descriptor table of its own: the
 * reads of /proc/self/maps take no number of the program's. */
static long shared_obj_apart(void *addr)
{
	long fd = gt_sys4(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	uint64_t a = (uint64_t)(uintptr_t)addr, key = 0;
	struct maps_line l = {{0}, 0, 0, 0};
	char buf[128];
	long n;
	int found = 0;
	while (!found && (n = gt_sys3(SYS_read, fd, buf, sizeof buf)) > 0) {
		for (long i = 0; i < n && !found; i++) {
			if (!maps_feed(&l, buf[i]))
				continue;
			found = l.field >= 6 && a >= l.v[0] && a < l.v[1];
			/* private memory is shared with nobody: its address names it (key 0) */
			if (found && l.shared && l.v[6])
				key = gt_kobj_key(GT_KOBJ_MEMORY, l.v[4] << 32 | l.v[5], l.v[6],
						  l.v[3] + (a - l.v[0]));
			l = (struct maps_line){{0}, 0, 0, 0};
		}
	}
	gt_sys1(SYS_close, fd);
	return (long)key;
}

size_t gt_maps_read(uint64_t (*spans)[2], size_t cap)
{
	long fd = gt_sys4(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct maps_line l = {{0}, 0, 0, 0};
	char buf[128];
	long n;
	size_t got = 0;
	while (got < cap && (n = gt_sys3(SYS_read, fd, buf, sizeof buf)) > 0) {
		for (long i = 0; i < n && got < cap; i++) {
			if (!maps_feed(&l, buf[i]))
				continue;
			if (l.field >= 2) {
				spans[got][0] = l.v[0];
				spans[got++][1] = l.v[1];
			}
			l = (struct maps_line){{0}, 0, 0, 0};
		}
	}
	gt_sys1(SYS_close, fd);
	return got;
}

uint64_t gt_shared_obj(const void *addr)
{
	return (uint64_t)gt_files_apart(shared_obj_apart, (void *)addr);
}
