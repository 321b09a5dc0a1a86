/* GOTRACE_MAX_CAPTURE: the bytes the captures of one run may hold together.  A run is the
 * root traced process (gt_cfg.is_root) and what it starts: they share one page,
 * <capture dir>/gotrace-<root pid>.budget, that counts the bytes every capture has taken
 * (headers and chunks).  The root makes it (or resets one a previous process of the same
 * pid left); every other process maps it at its capture's creation (a fork child keeps its
 * parent's mapping) and adds each chunk under its growth lock, so the count costs one atomic
 * add per chunk (1 MiB), never anything on the fast path.  A process that cannot open the
 * page (it became another user, or the root did not make one) counts its own capture alone.
 * Like the capture, the page is opened by path, mapped and closed again: no descriptor. */
#include "capture_budget.h"
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define GT_BUDGET_MAGIC "GTBUDGT"

struct gt_budget_page {
	char magic[8];
	uint64_t root_pid;
	uint64_t root_start_ticks;   /* /proc/PID/stat field 22: a reused pid is another run */
	_Atomic uint64_t used;       /* bytes taken by the run's captures */
};

static struct gt_budget_page *gt_budget;  /* shared with the run, or NULL */
static _Atomic uint64_t gt_budget_own;     /* this capture's bytes, when it counts alone */

static _Atomic uint64_t *counter(void)
{
	return gt_budget ? &gt_budget->used : &gt_budget_own;
}

static void budget_path(char *path, size_t cap)
{
	size_t n = 0;
	path[0] = 0;
	if (gt_cfg.capture_dir[0]) {
		n = gt_append(path, n, cap, gt_cfg.capture_dir);
		n = gt_append(path, n, cap, "/");
	}
	n = gt_append(path, n, cap, "gotrace-");
	n = gt_append(path, n, cap, gt_cfg.root_pid);
	gt_append(path, n, cap, ".budget");
}

static struct gt_budget_page *map_page(int root)
{
	/* under the creation path's exclusion, off the program's stack */
	static char path[GT_PATH_MAX];
	static struct stat st;
	budget_path(path, sizeof path);
	int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (root ? O_CREAT : 0);
	long fd = gt_sys4(SYS_openat, AT_FDCWD, path, flags, 0600);
	if (fd < 0)
		return NULL;
	long r = -1;
	/* the root gives the page its length; a shorter page (a root that died making it) is
	 * not mapped past its end */
	if ((root ? gt_sys2(SYS_ftruncate, fd, 4096) : 0) == 0 && gt_sys2(SYS_fstat, fd, &st) == 0 &&
	    st.st_size >= 4096)
		r = gt_sys((long)SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	gt_sys1(SYS_close, fd);
	return r < 0 && r > -4096 ? NULL : (struct gt_budget_page *)r;
}

void gt_budget_attach(struct gt_file_header *h)
{
	h->max_capture_bytes = gt_cfg.max_capture;
	gt_store(&gt_budget_own, 0);
	if (!gt_cfg.max_capture)
		return;
	if (!gt_budget) {
		struct gt_budget_page *p = map_page(gt_cfg.is_root);
		if (p && gt_cfg.is_root && (memcmp(p->magic, GT_BUDGET_MAGIC, 8) != 0 ||
					    p->root_pid != h->pid ||
					    p->root_start_ticks != h->proc_start_ticks)) {
			/* a page of another run: the root starts before any child of its run */
			p->root_pid = h->pid;
			p->root_start_ticks = h->proc_start_ticks;
			gt_store(&p->used, 0);
			memcpy(p->magic, GT_BUDGET_MAGIC, 8);
		}
		if (p && memcmp(p->magic, GT_BUDGET_MAGIC, 8) != 0) {
			gt_sys2(SYS_munmap, p, 4096);
			p = NULL;
		}
		gt_budget = p;
	}
	gt_add(counter(), GT_FILE_HEADER_SIZE);
}

int gt_budget_take(uint64_t bytes)
{
	if (!gt_cfg.max_capture)
		return 1;
	/* once over, every later chunk of the run is refused too: the bound is where the run's
	 * recording ends, not a race for what is left */
	if (gt_add(counter(), bytes) + bytes <= gt_cfg.max_capture)
		return 1;
	return 0;
}

uint64_t gt_budget_left(void)
{
	if (!gt_cfg.max_capture)
		return UINT64_MAX;
	uint64_t used = gt_load(counter());
	return used < gt_cfg.max_capture ? gt_cfg.max_capture - used : 0;
}

void gt_budget_give_back(uint64_t bytes)
{
	if (gt_cfg.max_capture)
		atomic_fetch_sub_explicit(counter(), bytes, memory_order_relaxed);
}
