/* capture_builder: see capture_builder.h. */
#include "capture_builder.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CB_THREADS 64
#define CB_FDS 64

struct gt_cb {
	uint8_t *image;
	size_t size, cap;
	uint32_t n_cpus;
	uint32_t chunk_size;
	int64_t *current;        /* per CPU: chunk index in use, -1 = none */
	bool compact;            /* gt_cb_set_compact */
	size_t n_compact;
	/* per thread serial below CB_THREADS, as the recorder keeps it: its open wait (kind and
	 * obj of its last BLOCK_BEGIN, nr of its last SYSCALL_BEGIN, until their ends), which a
	 * one-word end leaves out (capture.h, version 3) */
	struct {
		bool block, call, blocked; /* blocked: obj is its last block's, ended or not */
		uint8_t kind;
		uint64_t obj;
		uint32_t nr;
		int64_t late_k;  /* as the recorder's gt_late: chunk and time of the thread's last */
		uint64_t late_tsc; /* record 2^31 ticks or more after its chunk's first_tsc */
	} open[CB_THREADS];
	uint64_t fd_obj[CB_FDS]; /* the key the last FD record gave a descriptor (0: none) */
};

static struct gt_file_header *hdr(struct gt_cb *cb)
{
	return (struct gt_file_header *)cb->image;
}

static struct gt_chunk_header *chunk(struct gt_cb *cb, uint64_t k)
{
	return (struct gt_chunk_header *)(cb->image + GT_FILE_HEADER_SIZE + k * cb->chunk_size);
}

static bool reserve(struct gt_cb *cb, size_t size)
{
	if (size <= cb->cap)
		return true;
	size_t cap = cb->cap ? cb->cap : 1 << 20;
	while (cap < size)
		cap *= 2;
	uint8_t *n = realloc(cb->image, cap);
	if (!n)
		return false;
	memset(n + cb->cap, 0, cap - cb->cap);
	cb->image = n;
	cb->cap = cap;
	return true;
}

struct gt_cb *gt_cb_new(uint32_t n_cpus, uint32_t chunk_size, uint64_t start_tsc)
{
	struct gt_cb *cb = calloc(1, sizeof *cb);
	if (!cb)
		return NULL;
	cb->n_cpus = n_cpus;
	cb->chunk_size = chunk_size;
	cb->current = malloc(n_cpus * sizeof *cb->current);
	if (!cb->current || !reserve(cb, GT_FILE_HEADER_SIZE)) {
		gt_cb_free(cb);
		return NULL;
	}
	for (uint32_t i = 0; i < n_cpus; i++)
		cb->current[i] = -1;
	for (uint32_t i = 0; i < CB_THREADS; i++)
		cb->open[i].late_k = -1;
	cb->size = GT_FILE_HEADER_SIZE;
	struct gt_file_header *h = hdr(cb);
	memcpy(h->magic, GT_CAPTURE_MAGIC, sizeof h->magic);
	h->version = GT_CAPTURE_VERSION;
	h->byte_order = GT_BYTE_ORDER_MARK;
	h->header_size = GT_FILE_HEADER_SIZE;
	h->chunk_size = chunk_size;
	h->pid = 4242;
	h->ppid = 1;
	h->n_cpus = n_cpus;
	h->clock_source = GT_CLOCK_MONOTONIC;
	h->tsc_hz = 1000000000ull;
	h->start_tsc = start_tsc;
	h->start_mono_ns = start_tsc;
	h->start_real_ns = 1700000000000000000ull;
	h->stack_mode = GT_STACKS_FP;
	h->stack_depth = GT_MAX_STACK_DEPTH;
	h->arch = GT_CB_ARCH;
	strcpy(h->exe_path, "/usr/bin/test-program");
	strcpy(h->cmdline, "test-program");
	return cb;
}

void gt_cb_free(struct gt_cb *cb)
{
	if (!cb)
		return;
	free(cb->image);
	free(cb->current);
	free(cb);
}

struct gt_file_header *gt_cb_header(struct gt_cb *cb)
{
	return hdr(cb);
}

void gt_cb_set_clock(struct gt_cb *cb, enum gt_clock_source src, uint64_t tsc_hz)
{
	hdr(cb)->clock_source = src;
	hdr(cb)->tsc_hz = tsc_hz;
}

static int64_t new_chunk(struct gt_cb *cb, uint32_t cpu, uint64_t tsc)
{
	uint64_t k = hdr(cb)->n_chunks;
	size_t end = GT_FILE_HEADER_SIZE + (k + 1) * (size_t)cb->chunk_size;
	if (!reserve(cb, end))
		return -1;
	cb->size = end;
	struct gt_file_header *h = hdr(cb);
	h->n_chunks = k + 1;
	struct gt_chunk_header *c = chunk(cb, k);
	c->magic = GT_CHUNK_MAGIC;
	c->cpu = cpu;
	c->seq = k;
	c->used = GT_CHUNK_HEADER_SIZE;
	c->first_tsc = tsc;
	cb->current[cpu] = (int64_t)k;
	return (int64_t)k;
}

void gt_cb_set_compact(struct gt_cb *cb, bool on)
{
	cb->compact = on;
}

size_t gt_cb_compact_records(const struct gt_cb *cb)
{
	return cb->n_compact;
}

/* Whether compact record w, in a chunk whose first_tsc is base, expands into the full record
 * rec (len bytes) once its timestamp (which the caller checks the delta tells) and what the
 * reader fills in (gt_compact_open: checked by the caller too) are rec's. */
static bool expands_to(const uint64_t *w, uint64_t base, const uint8_t *rec, size_t len)
{
	uint64_t e[5], f[5] = {0};
	if (gt_compact_expand(w, base, e) != len)
		return false;
	memcpy(f, rec, len);
	e[1] = f[1];
	switch (gt_compact_open(w[0])) {
	case GT_BLOCK_END: case GT_WAKE: e[2] = f[2]; break;      /* obj */
	case GT_SYSCALL_END: e[2] |= (uint32_t)f[2]; break;       /* nr */
	case GT_SYSCALL_BEGIN: e[4] = f[4]; break;                /* the descriptor's key */
	default: break;
	}
	return !memcmp(e, f, len);
}

/* The one-word form of the full record rec (len bytes) in a chunk whose first_tsc is base,
 * into w: 1 when it fits and expands back into exactly rec once the reader fills in the
 * thread's open wait, else 0. */
static unsigned one_word_form(struct gt_cb *cb, const uint8_t *rec, size_t len, uint64_t base,
			      uint64_t w[3])
{
	const struct gt_rec *r = (const void *)rec;
	if (hdr(cb)->version < 3 || r->thread >= CB_THREADS)
		return 0;
	const struct gt_p_block_end *be = (const void *)(r + 1);
	const struct gt_p_syscall_end *se = (const void *)(r + 1);
	unsigned aux = r->aux, hi;
	switch (r->type) {
	case GT_YIELD:
		hi = GT_C1_YIELD;
		break;
	case GT_THREAD_END:
		hi = GT_C1_THREAD_END;
		break;
	case GT_WAKE: {
		const struct gt_p_wake *wk = (const void *)(r + 1);
		if (!cb->open[r->thread].blocked || cb->open[r->thread].obj != wk->obj ||
		    wk->count != 1 || wk->stack)
			return 0;
		hi = GT_C1_WAKE;
		break;
	}
	case GT_BLOCK_END:
		if (!cb->open[r->thread].block || cb->open[r->thread].kind != r->aux ||
		    cb->open[r->thread].obj != be->obj)
			return 0;
		hi = GT_C1_BLOCK_END;
		break;
	case GT_SYSCALL_END:
		if (!cb->open[r->thread].call || cb->open[r->thread].nr != se->nr || r->aux ||
		    (uint64_t)se->result >= GT_C1_RESULT_MAX)
			return 0;
		hi = GT_C1_SYSCALL_END, aux = (unsigned)se->result;
		break;
	default:
		return 0;
	}
	w[0] = gt_compact_word(GT_C_YIELD, aux, r->thread, hi) | (r->tsc - base) << 32;
	return expands_to(w, base, rec, len);
}

/* The compact form of the full record rec (len bytes) in a chunk whose first_tsc is base,
 * into w: its words when it expands back into exactly rec (every value fits), else 0. */
static unsigned compact_form(struct gt_cb *cb, const uint8_t *rec, size_t len, uint64_t base,
			     uint64_t w[3])
{
	const struct gt_rec *r = (const void *)rec;
	uint64_t p[3] = {0};
	if (len > 40)
		return 0;
	if (one_word_form(cb, rec, len, base, w))
		return 1;
	if (len < 24)
		return 0;
	memcpy(p, rec + sizeof *r, len - sizeof *r);
	uint32_t lo0 = (uint32_t)p[0], hi0 = (uint32_t)(p[0] >> 32);
	uint32_t lo1 = (uint32_t)p[1], hi1 = (uint32_t)(p[1] >> 32);
	unsigned ctype, hi = 0, words = len == 40 ? 3 : 2, aux = r->aux; /* a tail: word 2 */
	w[2] = p[2];
	switch (r->type) {
	case GT_BLOCK_BEGIN: /* obj, stack, flags; a condition wait's mutex (near it: 2 words) */
		ctype = len == 40 ? GT_C_BLOCK_BEGIN_MUTEX : GT_C_BLOCK_BEGIN;
		hi = lo1 >> 16, w[1] = p[0] | (uint64_t)lo1 << 48;
		if (len == 40 && hdr(cb)->version >= 3 &&
		    gt_compact_near_mutex((int64_t)(p[2] - p[0]), lo1) >= 0) {
			int near = gt_compact_near_mutex((int64_t)(p[2] - p[0]), lo1);
			aux = (unsigned)near & 15, hi = (unsigned)near >> 4, words = 2;
		}
		break;
	case GT_BLOCK_END: /* obj, result, err */
		ctype = GT_C_BLOCK_END, hi = lo1, w[1] = p[0] | (uint64_t)hi1 << 48;
		break;
	case GT_WAKE: /* obj, stack, count */
		ctype = hi1 == 1 ? GT_C_WAKE_ONE : GT_C_WAKE_ALL, hi = lo1 >> 16;
		w[1] = p[0] | (uint64_t)lo1 << 48;
		if (hi1 == GT_WAKE_UNSEEN && hdr(cb)->version >= 3) /* stack below 2^16 */
			ctype = GT_C_YIELD, hi = GT_C2_WAKE_UNSEEN;
		break;
	case GT_SYSCALL_BEGIN: /* nr, stack, arg; the kernel key tail (an FD record's: 2 words) */
		ctype = GT_C_SYSCALL_BEGIN, hi = len == 40 ? GT_C_HAS_OBJ : 0;
		w[1] = lo1 | (uint64_t)lo0 << 32 | (uint64_t)hi0 << 44;
		if (len == 40 && hdr(cb)->version >= 3 && p[1] < CB_FDS && cb->fd_obj[p[1]] &&
		    cb->fd_obj[p[1]] == p[2])
			hi = GT_C_FD_OBJ, words = 2;
		break;
	case GT_SYSCALL_END: /* nr, err, result */
		ctype = GT_C_SYSCALL_END, w[1] = lo1 | (uint64_t)lo0 << 32 | (uint64_t)hi0 << 44;
		break;
	case GT_YIELD:
		ctype = GT_C_YIELD, w[1] = lo0;
		break;
	case GT_LOCK_ACQUIRE: /* obj, stack, flags (waited and try beside the kind) */
	case GT_LOCK_RELEASE:
		if (hdr(cb)->version < 4 || r->aux > 3 || hi1 > 3)
			return 0;
		ctype = GT_C_YIELD, aux = r->aux | hi1 << 2, w[1] = p[0] | (uint64_t)lo1 << 48;
		hi = r->type == GT_LOCK_ACQUIRE ? GT_C2_LOCK_ACQUIRE : GT_C2_LOCK_RELEASE;
		break;
	default:
		return 0;
	}
	w[0] = gt_compact_word(ctype, aux, r->thread, hi) | (r->tsc - base) << 32;
	return expands_to(w, base, rec, len) ? words : 0;
}

uint64_t gt_cb_record(struct gt_cb *cb, uint32_t cpu, uint8_t type, uint8_t aux, uint32_t thread,
		      uint64_t tsc, const void *payload, size_t payload_len)
{
	if (cpu >= cb->n_cpus)
		return 0;
	size_t len = (size_t)GT_REC_WORDS(payload_len) * 8;
	if (len + GT_CHUNK_HEADER_SIZE > cb->chunk_size)
		return 0;
	uint8_t full[40] = {0};
	struct gt_rec r = {type, aux, (uint16_t)(len / 8), thread, tsc};
	uint64_t w[3];
	unsigned words = 0;
	if (cb->compact && len <= sizeof full) {
		memcpy(full, &r, sizeof r);
		if (payload_len)
			memcpy(full + sizeof r, payload, payload_len);
	}
	int64_t k = cb->current[cpu];
	/* as the recorder: compact against the chunk in use; a new chunk's first record is full */
	if (cb->compact && len <= sizeof full && k >= 0)
		words = compact_form(cb, full, len, chunk(cb, (uint64_t)k)->first_tsc, w);
	if (words) { /* the timestamp as the recorder tells it (capture.h) */
		uint64_t d = tsc - chunk(cb, (uint64_t)k)->first_tsc;
		if (hdr(cb)->version < 3)
			words = d >> 32 ? 0 : words;
		else if (d >> 31 && thread < CB_THREADS) {
			bool ok = cb->open[thread].late_k == k && cb->open[thread].late_tsc >= tsc - d &&
				  tsc - cb->open[thread].late_tsc < (1ull << 31);
			cb->open[thread].late_k = k, cb->open[thread].late_tsc = tsc;
			words = ok ? words : 0;
		} else if (d >> 31) {
			words = 0;
		}
	}
	size_t in_file = words ? words * 8 : len;
	if (k < 0 || chunk(cb, (uint64_t)k)->used + in_file > cb->chunk_size) {
		k = new_chunk(cb, cpu, tsc);
		in_file = len, words = 0;
	}
	if (k < 0)
		return 0;
	struct gt_chunk_header *c = chunk(cb, (uint64_t)k);
	uint64_t off = GT_FILE_HEADER_SIZE + (uint64_t)k * cb->chunk_size + c->used;
	if (words) {
		memcpy(cb->image + off, w, in_file);
		cb->n_compact++;
	} else {
		memcpy(cb->image + off, &r, sizeof r);
		if (payload_len)
			memcpy(cb->image + off + sizeof r, payload, payload_len);
	}
	c->used += in_file;
	if (thread < CB_THREADS && payload_len >= 8) {
		if (type == GT_BLOCK_BEGIN)
			cb->open[thread].block = cb->open[thread].blocked = true,
			cb->open[thread].kind = aux,
			cb->open[thread].obj = ((const struct gt_p_block *)payload)->obj;
		else if (type == GT_SYSCALL_BEGIN)
			cb->open[thread].call = true,
			cb->open[thread].nr = ((const struct gt_p_syscall *)payload)->nr;
		else if (type == GT_BLOCK_END)
			cb->open[thread].block = false;
		else if (type == GT_SYSCALL_END)
			cb->open[thread].call = false;
	}
	if (type == GT_FD && ((const struct gt_p_fd *)payload)->fd >= 0 &&
	    ((const struct gt_p_fd *)payload)->fd < CB_FDS)
		cb->fd_obj[((const struct gt_p_fd *)payload)->fd] = ((const struct gt_p_fd *)payload)->obj;
	return off;
}

uint64_t gt_cb_thread_new(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			  uint32_t child, uint32_t stack, uint64_t start_routine)
{
	struct gt_p_thread_new p = {child, stack, start_routine};
	return gt_cb_record(cb, cpu, GT_THREAD_NEW, 0, thread, t, &p, sizeof p);
}

uint64_t gt_cb_thread_start(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			    uint32_t tid, uint64_t start_routine)
{
	struct gt_p_thread_start p = {tid, 0, start_routine};
	return gt_cb_record(cb, cpu, GT_THREAD_START, 0, thread, t, &p, sizeof p);
}

uint64_t gt_cb_thread_end(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread)
{
	return gt_cb_record(cb, cpu, GT_THREAD_END, GT_END_RETURN, thread, t, NULL, 0);
}

uint64_t gt_cb_thread_name(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			   const char *name)
{
	struct gt_p_thread_name p = {{0}};
	strncpy(p.name, name, sizeof p.name - 1);
	return gt_cb_record(cb, cpu, GT_THREAD_NAME, 0, thread, t, &p, sizeof p);
}

uint64_t gt_cb_thread_existing(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			       int blocked, uint64_t start_routine)
{
	struct gt_p_thread_start p = {1000 + thread, 0, start_routine};
	return gt_cb_record(cb, cpu, GT_THREAD_EXISTING, blocked ? 1 : 0, thread, t, &p, sizeof p);
}

uint64_t gt_cb_block_begin(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			   enum gt_block_kind kind, uint64_t obj, uint32_t stack)
{
	struct gt_p_block p = {obj, stack, 0};
	return gt_cb_record(cb, cpu, GT_BLOCK_BEGIN, (uint8_t)kind, thread, t, &p, sizeof p);
}

uint64_t gt_cb_block_end(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			 enum gt_block_kind kind, uint64_t obj, enum gt_block_result result)
{
	struct gt_p_block_end p = {obj, result, 0};
	return gt_cb_record(cb, cpu, GT_BLOCK_END, (uint8_t)kind, thread, t, &p, sizeof p);
}

uint64_t gt_cb_wake(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
		    enum gt_block_kind kind, uint64_t obj, uint32_t count, uint32_t stack)
{
	struct gt_p_wake p = {obj, stack, count};
	return gt_cb_record(cb, cpu, GT_WAKE, (uint8_t)kind, thread, t, &p, sizeof p);
}

uint64_t gt_cb_syscall_begin(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			     enum gt_fd_kind fd_kind, uint32_t nr, int64_t arg, uint32_t stack)
{
	struct gt_p_syscall p = {nr, stack, arg};
	return gt_cb_record(cb, cpu, GT_SYSCALL_BEGIN, (uint8_t)fd_kind, thread, t, &p, sizeof p);
}

uint64_t gt_cb_syscall_end(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			   uint32_t nr, int64_t result)
{
	struct gt_p_syscall_end p = {nr, 0, result};
	return gt_cb_record(cb, cpu, GT_SYSCALL_END, 0, thread, t, &p, sizeof p);
}

uint64_t gt_cb_yield(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread, uint32_t stack)
{
	struct gt_p_stackonly p = {stack, 0};
	return gt_cb_record(cb, cpu, GT_YIELD, 0, thread, t, &p, sizeof p);
}

uint64_t gt_cb_stack(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t id, const uint64_t *pcs,
		     uint32_t n)
{
	uint8_t buf[sizeof(struct gt_p_stack) + GT_MAX_RECORD_WORDS * 8];
	if (n > GT_MAX_RECORD_WORDS - 4)
		n = GT_MAX_RECORD_WORDS - 4;
	struct gt_p_stack p = {id, n};
	memcpy(buf, &p, sizeof p);
	memcpy(buf + sizeof p, pcs, n * sizeof *pcs);
	return gt_cb_record(cb, cpu, GT_STACK, 0, 0, t, buf, sizeof p + n * sizeof *pcs);
}

uint64_t gt_cb_module(struct gt_cb *cb, uint32_t cpu, uint64_t t, const char *path,
		      const uint8_t *build_id, uint16_t build_id_len, uint64_t base, uint64_t lo,
		      uint64_t hi, uint32_t flags)
{
	uint8_t buf[sizeof(struct gt_p_module) + 64 + GT_PATH_MAX + 8];
	size_t path_len = strlen(path);
	if (build_id_len > 64 || path_len > GT_PATH_MAX)
		return 0;
	struct gt_p_module p = {base, lo, hi, build_id_len, (uint16_t)path_len, flags};
	memcpy(buf, &p, sizeof p);
	if (build_id_len)
		memcpy(buf + sizeof p, build_id, build_id_len);
	memcpy(buf + sizeof p + build_id_len, path, path_len);
	return gt_cb_record(cb, cpu, GT_MODULE, 0, 0, t, buf, sizeof p + build_id_len + path_len);
}

uint64_t gt_cb_clock(struct gt_cb *cb, uint32_t cpu, uint64_t tsc, uint64_t mono_ns)
{
	struct gt_p_clock p = {mono_ns, mono_ns + 1700000000000000000ull};
	return gt_cb_record(cb, cpu, GT_CLOCK, 0, 0, tsc, &p, sizeof p);
}

uint64_t gt_cb_notice(struct gt_cb *cb, uint32_t cpu, uint64_t t, enum gt_notice kind,
		      uint64_t value)
{
	struct gt_p_notice p = {value};
	return gt_cb_record(cb, cpu, GT_NOTICE, (uint8_t)kind, 0, t, &p, sizeof p);
}

uint64_t gt_cb_user(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
		    enum gt_user_kind kind, uint64_t id, uint64_t parent, uint32_t stack,
		    const char *name, const char *msg)
{
	uint8_t buf[sizeof(struct gt_p_user) + 2048];
	size_t nl = name ? strlen(name) : 0, ml = msg ? strlen(msg) : 0;
	if (nl + ml > 2048)
		return 0;
	struct gt_p_user p = {id, parent, stack, (uint16_t)nl, (uint16_t)ml};
	memcpy(buf, &p, sizeof p);
	if (nl)
		memcpy(buf + sizeof p, name, nl);
	if (ml)
		memcpy(buf + sizeof p + nl, msg, ml);
	return gt_cb_record(cb, cpu, GT_USER, (uint8_t)kind, thread, t, buf, sizeof p + nl + ml);
}

uint64_t gt_cb_process_name(struct gt_cb *cb, uint32_t cpu, uint64_t t, enum gt_name_when when,
			    const char *comm, const char *cmdline, size_t cmdline_len)
{
	uint8_t buf[sizeof(struct gt_p_process_name) + GT_CMDLINE_MAX];
	if (cmdline_len > GT_CMDLINE_MAX)
		return 0;
	struct gt_p_process_name p = { .cmdline_len = (uint16_t)cmdline_len };
	strncpy(p.comm, comm, sizeof p.comm - 1);
	memcpy(buf, &p, sizeof p);
	if (cmdline_len)
		memcpy(buf + sizeof p, cmdline, cmdline_len);
	return gt_cb_record(cb, cpu, GT_PROCESS_NAME, (uint8_t)when, 0, t, buf,
			    sizeof p + cmdline_len);
}

uint64_t gt_cb_capture_end(struct gt_cb *cb, uint32_t cpu, uint64_t t)
{
	return gt_cb_record(cb, cpu, GT_CAPTURE_END, 0, 0, t, NULL, 0);
}

const uint8_t *gt_cb_image(struct gt_cb *cb, size_t *size)
{
	*size = cb->size;
	return cb->image;
}

int gt_cb_write(struct gt_cb *cb, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < cb->size) {
		ssize_t n = write(fd, cb->image + done, cb->size - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	return close(fd);
}

int gt_cb_truncate(const char *path, uint64_t size)
{
	return truncate(path, (off_t)size);
}

static int overwrite(const char *path, uint64_t off, uint64_t len, bool garbage, uint64_t seed)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	uint8_t buf[4096];
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	while (len) {
		size_t n = len < sizeof buf ? (size_t)len : sizeof buf;
		for (size_t i = 0; i < n; i++) {
			if (garbage) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				buf[i] = (uint8_t)(x >> 24);
			} else {
				buf[i] = 0;
			}
		}
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
			close(fd);
			return -1;
		}
		off += n;
		len -= n;
	}
	return close(fd);
}

int gt_cb_zero_range(const char *path, uint64_t off, uint64_t len)
{
	return overwrite(path, off, len, false, 0);
}

int gt_cb_garbage(const char *path, uint64_t off, uint64_t len, uint64_t seed)
{
	return overwrite(path, off, len, true, seed);
}
