/* The module map: every loaded object at start (dl_iterate_phdr) and at each dlopen and
 * dlclose, as GT_MODULE / GT_MODULE_UNLOAD records (path, build-id, bias, address range). */
#include "modules.h"
#include "facts.h"
#include "hooks.def"
#include "stacks.h"
#include "frame_rules.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>

uintptr_t gt_self_lo, gt_self_hi;
char gt_self_path[GT_PATH_MAX];

#define GT_MAX_MODULES 2048u
struct gt_known {
	uintptr_t base, lo, hi;
	int seen; /* generation of the last walk that found it */
};
static struct gt_known gt_known[GT_MAX_MODULES];
static unsigned gt_n_known;
static int gt_walk_gen;
static unsigned long long gt_walk_adds; /* the loader's load count at the last walk */
static _Atomic int gt_modules_lock;

static void modules_lock(void) { gt_lock(&gt_modules_lock); }

static void modules_unlock(void) { gt_unlock(&gt_modules_lock); }

static void object_range(struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < *lo)
			*lo = a;
		if (a + ph->p_memsz > *hi)
			*hi = a + ph->p_memsz;
	}
}

static size_t build_id(struct dl_phdr_info *info, const uint8_t **id)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof *nh;
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
				*id = desc;
				return nh->n_descsz > 64 ? 64 : nh->n_descsz;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

static int emit_new(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	unsigned *index = data;
	int is_main = (*index)++ == 0;
	uintptr_t lo, hi;
	object_range(info, &lo, &hi);
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
		gt_walk_adds = info->dlpi_adds;
	if (!hi)
		return 0;
	for (unsigned i = 0; i < gt_n_known; i++) {
		if (gt_known[i].base == info->dlpi_addr && gt_known[i].lo == lo) {
			gt_known[i].seen = gt_walk_gen;
			return 0;
		}
	}
	if (gt_n_known < GT_MAX_MODULES)
		gt_known[gt_n_known++] = (struct gt_known){info->dlpi_addr, lo, hi, gt_walk_gen};

	const char *path = info->dlpi_name;
	char exe[GT_PATH_MAX];
	uint32_t flags = 0;
	if (is_main) {
		long n = gt_sys4(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", exe, sizeof exe - 1);
		exe[n > 0 ? n : 0] = 0;
		path = exe;
		flags |= 1;
	}
	if (lo == getauxval(AT_SYSINFO_EHDR))
		flags |= 2;
	if (!path)
		path = "";
	const uint8_t *id = NULL;
	size_t id_len = build_id(info, &id);
	size_t path_len = strlen(path);
	if (path_len > GT_PATH_MAX)
		path_len = GT_PATH_MAX;
	uint32_t bytes = (uint32_t)((16 + sizeof(struct gt_p_module) + id_len + path_len + 7) & ~(size_t)7);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	uint64_t *r = gt_reserve(cpu, bytes, tsc);
	if (!r)
		return 0;
	struct gt_p_module *m = (struct gt_p_module *)(r + 2);
	r[1] = tsc;
	m->base = info->dlpi_addr;
	m->lo = lo;
	m->hi = hi;
	m->build_id_len = (uint16_t)id_len;
	m->path_len = (uint16_t)path_len;
	m->flags = flags;
	uint8_t *tail = (uint8_t *)(m + 1);
	memcpy(tail, id, id_len);
	memcpy(tail + id_len, path, path_len);
	memset(tail + id_len + path_len, 0, bytes - (16 + sizeof *m + id_len + path_len));
	gt_commit(r, gt_rec_word(GT_MODULE, 0, bytes, 0));
	return 0;
}

static _Atomic int gt_walks;                  /* the tracer's walks in flight */

int gt_walk_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	atomic_fetch_add(&gt_walks, 1);
	int r = dl_iterate_phdr(cb, data);
	atomic_fetch_sub(&gt_walks, 1);
	return r;
}

/* A walk takes microseconds.  One of the forking thread's own (a signal handler that forks
 * inside it) would never end: the wait gives up after a while, rather than keep a thread
 * variable (the tracer's TLS comes out of every thread's stack). */
void gt_walks_settle(void)
{
	for (unsigned i = 0; atomic_load(&gt_walks) && i < 100000; i++)
		gt_sys0(SYS_sched_yield);
}

void gt_modules_emit_all(void)
{
	unsigned index = 0;
	modules_lock();
	gt_walk_gen++;
	gt_walk_objects(emit_new, &index);
	modules_unlock();
}

static int loader_adds(struct dl_phdr_info *info, size_t size, void *data)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
		*(unsigned long long *)data = info->dlpi_adds;
	return 1; /* the count is the same in every entry: one is enough */
}

void gt_modules_cover(const uintptr_t *pcs, unsigned n)
{
	/* read without the lock: a walk racing with this costs at most one walk more */
	unsigned known = gt_n_known;
	for (unsigned i = 0; i < n; i++) {
		unsigned k = 0;
		while (k < known && (pcs[i] < gt_known[k].lo || pcs[i] >= gt_known[k].hi))
			k++;
		if (k < known)
			continue;
		/* JIT code or a broken frame is in no object either: walk only when the loader
		 * loaded something since the last walk */
		unsigned long long adds = gt_walk_adds;
		gt_walk_objects(loader_adds, &adds);
		if (adds != gt_walk_adds)
			gt_modules_emit_all();
		return;
	}
}

void gt_modules_reset(void)
{
	gt_n_known = 0;
	atomic_store(&gt_modules_lock, 0);
}

/* After a dlclose: every known object the walk no longer finds was unloaded. */
static void emit_unloaded(void)
{
	unsigned index = 0;
	modules_lock();
	int gen = ++gt_walk_gen;
	gt_walk_objects(emit_new, &index);
	for (unsigned i = 0; i < gt_n_known;) {
		if (gt_known[i].seen == gen) {
			i++;
			continue;
		}
		unsigned cpu;
		uint64_t tsc = gt_now(&cpu);
		struct gt_p_module_unload p = {.base = gt_known[i].base, .lo = gt_known[i].lo};
		gt_emit(0, GT_MODULE_UNLOAD, 0, tsc, cpu, &p, sizeof p);
		gt_known[i] = gt_known[--gt_n_known];
	}
	modules_unlock();
}

static int find_range(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t *r = data, lo, hi;
	object_range(info, &lo, &hi);
	if (r[0] >= lo && r[0] < hi) {
		r[1] = lo;
		r[2] = hi;
		return 1;
	}
	return 0;
}

void gt_module_range(uintptr_t pc, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t r[3] = {pc, 0, 0};
	gt_walk_objects(find_range, r);
	*lo = r[1];
	*hi = r[2];
}

void gt_self_range(void)
{
	Dl_info di;
	gt_module_range((uintptr_t)gt_self_range, &gt_self_lo, &gt_self_hi);
	gt_self_path[0] = 0;
	if (dladdr((void *)(uintptr_t)gt_self_range, &di) && di.dli_fname) {
		size_t n = 0;
		if (di.dli_fname[0] != '/') {
			long r = gt_sys2(SYS_getcwd, gt_self_path, sizeof gt_self_path - 2);
			if (r > 0) {
				n = strlen(gt_self_path);
				gt_self_path[n++] = '/';
			}
		}
		size_t len = strlen(di.dli_fname);
		if (n + len < sizeof gt_self_path) {
			memcpy(gt_self_path + n, di.dli_fname, len + 1);
		}
	}
}

/* Runs a module walk as the tracer, errno kept. */
static void as_tracer(void (*walk)(void))
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return;
	int saved = errno;
	gt_busy_on(t);
	gt_offstack(1, (void *)walk, 0, 0, 0); /* kilobytes of stack; the loader's lock */
	t->busy = 0;
	errno = saved;
}

GT_EXPORT void *dlopen(const char *file, int mode)
{
	void *h = GT_REAL(dlopen)(file, mode);
	if (h)
		as_tracer(gt_modules_emit_all);
	return h;
}

GT_EXPORT int dlclose(void *handle)
{
	int r = GT_REAL(dlclose)(handle);
	if (r == 0) {
		gt_frame_rules_forget();
		as_tracer(emit_unloaded);
	}
	return r;
}
