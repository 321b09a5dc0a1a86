/* Stacks through the real symbolizer: the capture's module map names this test program, its
 * stacks and start routine are addresses of functions below, and the trace Go 1.23 reads back
 * carries their names. */
#include <criterion/criterion.h>
#include <limits.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer/symbolizer.h"
#include "test_util.h"

__attribute__((noinline)) int gt_test_worker_routine(int x)
{
	for (int i = 0; i < 10; i++)
		x = x * 31 + i;
	return x;
}

__attribute__((noinline)) int gt_test_lock_site(int x)
{
	for (int i = 0; i < 10; i++)
		x = x * 17 + i;
	return x;
}

struct main_module {
	uint64_t bias, lo, hi;
	bool found;
};

static int find_main(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct main_module *m = data;
	if (m->found || (info->dlpi_name && info->dlpi_name[0]))
		return 0;
	m->found = true;
	m->bias = info->dlpi_addr;
	m->lo = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < m->lo)
			m->lo = a;
		if (a + ph->p_memsz > m->hi)
			m->hi = a + ph->p_memsz;
	}
	return 1;
}

Test(symbols, stacks_and_start_routines_are_named)
{
	struct main_module mm = {0};
	dl_iterate_phdr(find_main, &mm);
	cr_assert(mm.found);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	cr_assert_gt(n, 0);
	exe[n] = 0;

	uint64_t worker = (uint64_t)(uintptr_t)gt_test_worker_routine;
	uint64_t lock = (uint64_t)(uintptr_t)gt_test_lock_site;
	struct gt_cb *cb = gt_cb_new(2, 65536, 1000000);
	gt_cb_module(cb, 0, 1000001, exe, NULL, 0, mm.bias, mm.lo, mm.hi, GT_SYM_MAIN_EXE);
	gt_cb_thread_existing(cb, 0, 1000010, 1, 0, 0);
	uint64_t pcs[] = {lock + 12, worker + 12};   /* return addresses inside both functions */
	gt_cb_stack(cb, 0, 1000020, 1, pcs, 2);
	gt_cb_thread_new(cb, 0, 1000100, 1, 2, 1, worker);
	gt_cb_thread_start(cb, 1, 1000200, 2, 77, worker);
	gt_cb_block_begin(cb, 1, 1000300, 2, GT_BK_MUTEX, 0x7f0000001000ull, 1);
	gt_cb_wake(cb, 0, 1000400, 1, GT_BK_MUTEX, 0x7f0000001000ull, 1, 1);
	gt_cb_block_end(cb, 1, 1000500, 2, GT_BK_MUTEX, 0x7f0000001000ull, GT_BR_OK);
	char cap[PATH_MAX], trace[PATH_MAX];
	snprintf(cap, sizeof cap, "%s/symbols.cap", test_tmpdir());
	cr_assert_eq(gt_cb_write(cb, cap), 0);
	gt_cb_free(cb);
	snprintf(trace, sizeof trace, "%s/symbols.trace", test_tmpdir());
	struct gt_convert_options opt = {0};
	struct gt_convert_summary sum;
	char err[512];
	cr_assert_eq(gt_convert_file(cap, trace, &opt, &sum, err, sizeof err), 0, "%s", err);

	char *dump = gt_dump_123(trace);
	cr_assert(dump, "Go 1.23 rejected the trace (its error is above)");
	struct ev23 e;
	size_t creates = gt_dump_123_count(dump, "GoID=2 NotExist->Runnable");
	for (size_t k = 0; k < creates && find23(dump, "GoID=2 NotExist->Runnable", k, &e); k++) {
		cr_expect_str_eq(e.tstack, "gt_test_worker_routine");
		cr_expect_str_eq(e.stack, "gt_test_lock_site;gt_test_worker_routine");
	}
	size_t blocks = gt_dump_123_count(dump, "GoID=2 Running->Waiting");
	for (size_t k = 0; k < blocks && find23(dump, "GoID=2 Running->Waiting", k, &e); k++)
		cr_expect_str_eq(e.stack, "gt_test_lock_site;gt_test_worker_routine");
	cr_expect(creates > 0 && blocks > 0);
	free(dump);
}
