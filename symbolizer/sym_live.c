/* sym_live: the threads of a live process, unwound as eu-stack does it: the process's modules
 * from /proc/PID/maps (dwfl_linux_proc_report), dwfl_linux_proc_attach, dwfl_getthreads and
 * dwfl_thread_getframes.  The caller has already stopped every thread with ptrace (seize and
 * interrupt), so libdwfl neither attaches nor detaches; the modules are read before that,
 * so that the process is stopped only for the unwinding.  The same modules go into the
 * symbolizer's current space, so that the stacks and the data addresses are symbolized and
 * named as those of a capture. */
#include "symbolizer_private.h"

#include <dwarf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const Dwfl_Callbacks live_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

struct live_walk {
	struct gt_symbolizer *sym;
	char exe[PATH_MAX];
	gt_sym_thread_fn fn;
	void *ctx;
	uint64_t *pcs;
	size_t n, max;
};

/* One module of the process into the symbolizer: its file, build-id, load bias and range. */
static int add_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
		      void *arg)
{
	(void)userdata;
	struct live_walk *w = arg;
	Dwarf_Addr end, bias;
	dwfl_module_info(mod, NULL, NULL, &end, NULL, NULL, NULL, NULL);
	const unsigned char *id = NULL;
	GElf_Addr id_vaddr;
	if (name[0] == '[' || dwfl_module_getelf(mod, &bias) == NULL)
		return DWARF_CB_OK;   /* the vDSO, or a file gone: its PCs read as addresses */
	int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
	uint32_t flags = strcmp(name, w->exe) == 0 ? GT_SYM_MAIN_EXE : 0;
	gt_sym_add_module(w->sym, name, id, id_len > 0 ? (size_t)id_len : 0, bias, start, end - 1,
			  flags);
	return DWARF_CB_OK;
}

static int frame(Dwfl_Frame *state, void *arg)
{
	struct live_walk *w = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	/* gt_sym_stack's convention, as in sym_unwind.c: return addresses */
	w->pcs[w->n++] = activation ? pc + 1 : pc;
	return w->n < w->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static int thread(Dwfl_Thread *t, void *arg)
{
	struct live_walk *w = arg;
	w->n = 0;
	int rc = dwfl_thread_getframes(t, frame, w);
	w->fn(w->ctx, (uint32_t)dwfl_thread_tid(t), w->pcs, w->n, rc == 0 || w->n == w->max);
	return DWARF_CB_OK;
}

struct gt_sym_live {
	Dwfl *dwfl;
	struct live_walk walk;
};

struct gt_sym_live *gt_sym_live_open(struct gt_symbolizer *sym, int pid)
{
	struct gt_sym_live *live = calloc(1, sizeof *live);
	if (live == NULL)
		return NULL;
	live->walk.sym = sym;
	char link[64];
	snprintf(link, sizeof link, "/proc/%d/exe", pid);
	ssize_t len = readlink(link, live->walk.exe, sizeof live->walk.exe - 1);
	live->walk.exe[len > 0 ? len : 0] = 0;
	live->dwfl = dwfl_begin(&live_callbacks);
	if (live->dwfl != NULL) {
		dwfl_report_begin(live->dwfl);
		if (dwfl_linux_proc_report(live->dwfl, pid) == 0 &&
		    dwfl_report_end(live->dwfl, NULL, NULL) == 0) {
			dwfl_getmodules(live->dwfl, add_module, &live->walk, 0);
			return live;
		}
	}
	gt_sym_live_close(live);
	return NULL;
}

int gt_sym_live_threads(struct gt_sym_live *live, int pid, uint64_t *pcs, size_t max,
			gt_sym_thread_fn fn, void *ctx)
{
	struct live_walk *w = &live->walk;
	w->fn = fn;
	w->ctx = ctx;
	w->pcs = pcs;
	w->max = max;
	if (max == 0 || dwfl_linux_proc_attach(live->dwfl, pid, true) != 0)
		return -1;
	return dwfl_getthreads(live->dwfl, thread, w) == 0 ? 0 : -1;
}

void gt_sym_live_close(struct gt_sym_live *live)
{
	if (live != NULL && live->dwfl != NULL)
		dwfl_end(live->dwfl);
	free(live);
}
