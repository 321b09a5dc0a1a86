/* capture_compact: records as the file holds them (capture_internal.h). */
#include "capture_internal.h"
#include "syscalls.h"

#include <string.h>

/* A record at p with `avail` readable bytes: does it parse?  Returns its length or 0. */
static size_t record_valid(const struct gt_capture *c, const uint8_t *p,
			   size_t avail)
{
	if (avail < sizeof(struct gt_rec))
		return 0;
	const struct gt_rec *r = (const struct gt_rec *)p;
	int minp = gt_capture_min_payload(r->type);
	if (minp < 0 || r->nwords < 2 || r->nwords > GT_MAX_RECORD_WORDS)
		return 0;
	size_t len = (size_t)r->nwords * 8;
	if (len > avail || len - sizeof *r < (size_t)minp)
		return 0;
	if (r->thread >= MAX_THREAD_SERIAL)
		return 0;
	if (r->tsc < c->tsc_lo || r->tsc > c->tsc_hi)
		return 0;
	const uint8_t *pl = p + sizeof *r;
	size_t plen = len - sizeof *r;
	switch (r->type) {
	case GT_STACK: {
		const struct gt_p_stack *st = (const void *)pl;
		if (!st->id || st->id > MAX_STACK_ID || st->nframes > GT_MAX_RECORD_WORDS ||
		    sizeof *st + (size_t)st->nframes * 8 > plen)
			return 0;
		break;
	}
	case GT_PROCESS_NAME: {
		const struct gt_p_process_name *n = (const void *)pl;
		if (n->cmdline_len > GT_CMDLINE_MAX || sizeof *n + (size_t)n->cmdline_len > plen)
			return 0;
		break;
	}
	case GT_MODULE: {
		const struct gt_p_module *m = (const void *)pl;
		if (m->build_id_len > 64 || m->path_len > GT_PATH_MAX ||
		    sizeof *m + (size_t)m->build_id_len + m->path_len > plen)
			return 0;
		break;
	}
	case GT_USER: {
		const struct gt_p_user *u = (const void *)pl;
		if (sizeof *u + (size_t)u->name_len + u->msg_len > plen)
			return 0;
		break;
	}
	default:
		break;
	}
	return len;
}

size_t gtc_record_parse(const struct gt_capture *c, const uint8_t *p, size_t avail,
			   uint64_t base, struct gt_u64map *near, uint64_t exp[EXP_WORDS],
			   const uint8_t **full, size_t *full_len, uint8_t *open)
{
	size_t len;
	*open = 0;
	if (c->header.version >= 2 && avail >= 8 && (p[0] & GT_COMPACT_BIT)) {
		uint64_t w[3];
		memcpy(w, p, 8);
		len = gt_compact_words(w[0]) * 8;
		if (len > avail || (len == 8 && c->header.version < 3))
			return 0;
		memcpy(w, p, len);
		gt_compact_expand(w, base, exp);
		if (c->header.version >= 3) {
			const uint64_t *t = gt_u64map_find(near, ((const struct gt_rec *)exp)->thread);
			exp[1] = gt_compact_tsc(w[0], base, t ? *t : base);
		}
		*full = (const uint8_t *)exp;
		*full_len = record_valid(c, *full, 5 * 8);
		*open = (uint8_t)gt_compact_open(w[0]);
	} else {
		*full = p;
		len = *full_len = record_valid(c, p, avail);
	}
	if (!*full_len)
		return 0;
	if (c->header.version >= 3) { /* the thread's latest time in the chunk: the next's near */
		const struct gt_rec *r = (const void *)*full;
		bool found;
		uint64_t *t = gt_u64map_slot(near, r->thread, &found);
		if (t && (!found || r->tsc > *t))
			*t = r->tsc;
	}
	return len;
}

#define OPEN (1ull << 63)          /* objs leave bit 63 clear (capture.h) */
#define OPEN_CALL (1ull << 32)     /* serials are below it */
#define OPEN_FD (1ull << 33)
#define OPEN_LAST (1ull << 34)

/* A record leaving the merge: the thread's open wait follows its begins and ends, and the
 * descriptors' keys their FD records (version 3); a one-word end takes the obj or nr of the
 * wait it closes, a one-word wake the obj of its thread's last block, a SYSCALL_BEGIN by
 * GT_C_FD_OBJ its descriptor's key (capture.h). */
void gtc_open_waits(struct gt_capture *c, uint32_t slot)
{
	struct gt_rec *r = (struct gt_rec *)c->slots[slot].data;
	bool block = r->type == GT_BLOCK_BEGIN || r->type == GT_BLOCK_END, fd = r->type == GT_FD;
	if (c->header.version >= 3 && r->type == GT_THREAD_END) {
		/* its last record: what it had open goes (memory follows the live threads) */
		gt_u64map_remove(&c->open, r->thread);
		gt_u64map_remove(&c->open, r->thread | OPEN_CALL);
		gt_u64map_remove(&c->open, r->thread | OPEN_LAST);
		return;
	}
	if (c->header.version < 3 ||
	    !(block || fd || r->type == GT_SYSCALL_BEGIN || r->type == GT_SYSCALL_END ||
	      r->type == GT_WAKE))
		return;
	if (r->type == GT_BLOCK_BEGIN || r->type == GT_WAKE) { /* the thread's last block's obj */
		bool found;
		uint64_t *last = gt_u64map_slot(&c->open, r->thread | OPEN_LAST, &found);
		uint64_t *obj = (uint64_t *)(r + 1); /* gt_p_block's and gt_p_wake's first field */
		if (r->type == GT_BLOCK_BEGIN && last)
			*last = OPEN | *obj;
		else if (c->slots[slot].open && last && (*last & OPEN))
			*obj = *last & ~OPEN;
		else if (c->slots[slot].open)
			c->stats.open_unknown++;
		if (r->type == GT_WAKE)
			return;
	}
	if (r->type == GT_SYSCALL_BEGIN && c->slots[slot].open) { /* its descriptor's key */
		const struct gt_p_syscall *s = (const void *)(r + 1);
		const uint64_t *k = gt_u64map_find(&c->open, OPEN_FD | (uint32_t)s->arg);
		if (k)
			((struct gt_p_syscall_obj *)(s + 1))->obj = *k & ~OPEN;
		else
			c->stats.open_unknown++;
	}
	bool found;
	uint64_t key = fd ? OPEN_FD | (uint32_t)((const struct gt_p_fd *)(r + 1))->fd
			  : r->thread | (block ? 0 : OPEN_CALL);
	uint64_t *v = gt_u64map_slot(&c->open, key, &found);
	if (!v) {
		c->stats.open_unknown += c->slots[slot].open != 0;
		return;
	}
	if (fd) {
		*v = OPEN | ((const struct gt_p_fd *)(r + 1))->obj;
	} else if (r->type == GT_BLOCK_BEGIN) {
		*v = OPEN | ((const struct gt_p_block *)(r + 1))->obj;
	} else if (r->type == GT_SYSCALL_BEGIN) {
		*v = OPEN | ((const struct gt_p_syscall *)(r + 1))->nr;
	} else {
		if (c->slots[slot].open && !(*v & OPEN))
			c->stats.open_unknown++;
		else if (c->slots[slot].open == GT_BLOCK_END)
			((struct gt_p_block_end *)(r + 1))->obj = *v & ~OPEN;
		else if (c->slots[slot].open)
			((struct gt_p_syscall_end *)(r + 1))->nr = (uint32_t)*v;
		*v = 0;
	}
}

void gtc_canonical_syscall(struct gt_capture *c, uint32_t slot)
{
	struct gt_rec *r = (struct gt_rec *)c->slots[slot].data;
	if (c->header.arch != GT_ARCH_AARCH64 ||
	    (r->type != GT_SYSCALL_BEGIN && r->type != GT_SYSCALL_END))
		return;
	/* nr is the first field of both payloads; an end's was its begin's, not yet renumbered */
	uint32_t *nr = (uint32_t *)(void *)(r + 1);
	*nr = gt_syscall_canonical(GT_ARCH_AARCH64, *nr);
}
