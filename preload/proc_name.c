/* GT_PROCESS_NAME: see proc_name.h.
 *
 * The command line is read into a static buffer (never onto the program's stack) owned by
 * one thread at a time through a try-flag: a thread that finds it taken skips its check,
 * as the owner is writing the same state.  Unchanged names (a hash of what was last
 * written) are not written again, so a program that creates many threads pays the reads,
 * not the records. */
#include "proc_name.h"
#include "facts.h"

#include <fcntl.h>
#include <string.h>

static char gt_cmdline_buf[GT_CMDLINE_MAX];
static _Atomic int gt_name_busy;
static _Atomic uint64_t gt_name_hash; /* of the last written name; 0 = none */

/* Bytes of path read into buf (at most cap), 0 when it cannot be read. */
static size_t read_proc(const char *path, char *buf, size_t cap)
{
	long fd = gt_sys4(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	long n = gt_sys3(SYS_read, fd, buf, cap);
	gt_sys1(SYS_close, fd);
	return n > 0 ? (size_t)n : 0;
}

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

void gt_proc_name_emit(uint8_t when)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&gt_name_busy, &expected, 1))
		return;
	struct gt_p_process_name p = {.cmdline_len = 0};
	size_t n = read_proc("/proc/self/comm", p.comm, sizeof p.comm - 1);
	if (n > 0 && p.comm[n - 1] == '\n')
		p.comm[n - 1] = 0;
	size_t len = read_proc("/proc/self/cmdline", gt_cmdline_buf, sizeof gt_cmdline_buf);
	uint64_t h = fnv1a(fnv1a(0xcbf29ce484222325ull, p.comm, sizeof p.comm), gt_cmdline_buf, len);
	h += !h;
	if (when == GT_NAME_THREAD && h == gt_load(&gt_name_hash)) {
		atomic_store(&gt_name_busy, 0);
		return;
	}
	p.cmdline_len = (uint16_t)len;
	uint32_t bytes = (uint32_t)((16 + sizeof p + len + 7) & ~(size_t)7);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	uint64_t *r = gt_reserve(cpu, bytes, tsc);
	if (r) {
		r[1] = tsc;
		memcpy(r + 2, &p, sizeof p);
		char *tail = (char *)(r + 2) + sizeof p;
		memcpy(tail, gt_cmdline_buf, len);
		memset(tail + len, 0, bytes - (16 + sizeof p + len));
		gt_commit(r, gt_rec_word(GT_PROCESS_NAME, when, bytes, 0));
		gt_store(&gt_name_hash, h);
	}
	atomic_store(&gt_name_busy, 0);
}

void gt_proc_name_reset(void)
{
	atomic_store(&gt_name_busy, 0);
	gt_store(&gt_name_hash, 0);
}
