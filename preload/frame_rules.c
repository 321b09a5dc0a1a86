/* Unwind rules per return address, and the walk libunwind's fast path makes with them
 * (libunwind 1.6, src/x86_64/Gtrace.c), made here without libunwind's set-up per call.
 *
 * A frame whose unwind information says "CFA = rsp or rbp + offset, the return address at
 * CFA - 8, rbp unchanged or saved at CFA + offset" (what libunwind calls a standard frame)
 * is stepped here; its rule is found once in the object's .eh_frame (through
 * .eh_frame_hdr's table, as libunwind finds it) and kept in a table all threads share,
 * keyed by return address.  A signal frame (the return address is glibc's __restore_rt,
 * known by its code as libunwind knows it) is stepped as libunwind's fast path steps it: the
 * interrupted registers are read from the ucontext the kernel put there, and the interrupted
 * instruction's rule is kept under its address + 1 (a return address's rule is the call's).
 * Anything else (a CFA expression, no unwind information, an encoding not handled here) is
 * remembered as such, and the stack is left to libunwind whole.  Lookups take no lock;
 * learning a rule takes the loader's lock (dl_iterate_phdr, as libunwind's own misses do)
 * and runs on a walk stack (stacks.c). */
#include "frame_rules.h"
#include "modules.h"

#include <link.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ucontext.h>

/* bumped by dlclose: a rule learned before names code that may be gone */
_Atomic uint64_t gt_rules_gen = 1;

#if defined(__x86_64__)

/* Slot: key (return address | generation << 47; GT_KEY_CLAIMED while written), rule. */
#define GT_RULE_SLOTS (1u << 15)
#define GT_RULE_PROBES 16u
#define GT_KEY_CLAIMED 1ull
#define GT_PC_BITS 47
struct gt_rule_slot {
	_Atomic uint64_t key, rule;
};
static struct gt_rule_slot *gt_rules;

/* Rule word: bits 0-1 the kind, bit 2 CFA on rsp (else rbp), bits 3-18 where rbp is saved
 * (CFA-relative, -1: unchanged), bits 19-50 the CFA's offset. */
enum { GT_RULE_UNKNOWN, GT_RULE_STANDARD, GT_RULE_LAST, GT_RULE_LIBUNWIND };
/* a signal frame: libunwind's kind, with the bit no libunwind rule sets */
#define GT_RULE_SIGRETURN (GT_RULE_LIBUNWIND | 1u << 2)
#define GT_RULE_KIND(r) ((unsigned)(r) & 3u)
#define GT_RULE_ON_RSP(r) (((r) >> 2) & 1u)
#define GT_RULE_RBP_OFF(r) ((int64_t)(int16_t)((r) >> 3))
#define GT_RULE_CFA_OFF(r) ((int64_t)(int32_t)((r) >> 19))

static uint64_t rule_word(unsigned kind, int on_rsp, int64_t cfa_off, int64_t rbp_off)
{
	return kind | (uint64_t)on_rsp << 2 | (uint64_t)(uint16_t)rbp_off << 3 |
	       (uint64_t)(uint32_t)cfa_off << 19;
}

GT_INLINE unsigned rule_slot(uintptr_t pc)
{
	return (unsigned)((pc * 0x9E3779B97F4A7C15ull) >> 49);
}

/* the generation's low 17 bits: a rule 2^17 dlcloses old would be taken for a new one */
#define GT_GEN_MASK 0x1ffffu
GT_INLINE uint64_t rule_key(uintptr_t pc, uint64_t gen)
{
	return pc | (gen & GT_GEN_MASK) << GT_PC_BITS;
}

/* pc's rule, GT_RULE_UNKNOWN when none is kept for this generation */
GT_INLINE uint64_t rule_of(uintptr_t pc, uint64_t gen)
{
	uint64_t want = rule_key(pc, gen);
	unsigned idx = rule_slot(pc);
	for (unsigned probe = 0; probe < GT_RULE_PROBES; probe++) {
		struct gt_rule_slot *s = &gt_rules[(idx + probe) & (GT_RULE_SLOTS - 1)];
		uint64_t k = gt_load(&s->key);
		if (k == want) {
			uint64_t r = gt_load(&s->rule);
			/* a slot taken over since (a stale generation's) is read again as a miss */
			return atomic_load_explicit(&s->key, memory_order_relaxed) == want ? r : 0;
		}
		if (!k)
			return 0;
	}
	return 0;
}

static int rule_keep(uintptr_t pc, uint64_t gen, uint64_t rule)
{
	uint64_t want = rule_key(pc, gen);
	unsigned idx = rule_slot(pc);
	for (unsigned probe = 0; probe < GT_RULE_PROBES; probe++) {
		struct gt_rule_slot *s = &gt_rules[(idx + probe) & (GT_RULE_SLOTS - 1)];
		uint64_t k = gt_load(&s->key);
		if (k == want)
			return 1;
		if (k == GT_KEY_CLAIMED || (k && k >> GT_PC_BITS == (gen & GT_GEN_MASK)))
			continue;
		if (!atomic_compare_exchange_strong(&s->key, &k, GT_KEY_CLAIMED))
			continue;
		atomic_store_explicit(&s->rule, rule, memory_order_relaxed);
		atomic_store_explicit(&s->key, want, memory_order_release);
		return 1;
	}
	return 0; /* the neighbourhood is full: pc's stacks stay libunwind's */
}

/* ---- reading .eh_frame ------------------------------------------------------------- */

struct gt_cfi_reader {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t read_uleb(struct gt_cfi_reader *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

static int64_t read_sleb(struct gt_cfi_reader *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0x80;
	while (r->p < r->end && (b & 0x80)) {
		b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	}
	if (b & 0x80)
		r->bad = 1;
	else if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

static uint64_t read_fixed(struct gt_cfi_reader *r, unsigned n)
{
	uint64_t v = 0;
	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	__builtin_memcpy(&v, r->p, n); /* little-endian */
	r->p += n;
	return v;
}

/* A pointer in encoding enc (DW_EH_PE_*): absolute or pc-relative, fixed sizes and LEB128;
 * anything else (data-, text- or function-relative, indirect) marks the reader bad. */
static uintptr_t read_encoded(struct gt_cfi_reader *r, uint8_t enc)
{
	uintptr_t at = (uintptr_t)r->p;
	uint64_t v;
	switch (enc & 0x0f) {
	case 0x00: v = read_fixed(r, 8); break;
	case 0x01: v = read_uleb(r); break;
	case 0x02: v = read_fixed(r, 2); break;
	case 0x03: v = read_fixed(r, 4); break;
	case 0x04: v = read_fixed(r, 8); break;
	case 0x09: v = (uint64_t)read_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)read_fixed(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)read_fixed(r, 4); break;
	case 0x0c: v = read_fixed(r, 8); break;
	default: r->bad = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: return (uintptr_t)v;
	case 0x10: return at + (uintptr_t)v;
	default: r->bad = 1; return 0;
	}
}

/* The rules of the registers the walk needs: the CFA, rbp (6), rsp (7), the return
 * address (16).  DWARF numbers from 17 on make libunwind fail, so they end the reading. */
enum { GT_REG_RBP = 6, GT_REG_RSP = 7, GT_REG_RA = 16, GT_REGS_KNOWN = 17 };
enum { GT_W_SAME, GT_W_UNDEF, GT_W_CFAREL, GT_W_OTHER };
struct gt_cfi_regs {
	uint8_t cfa_reg, cfa_other; /* cfa_other: an expression, or none yet */
	int64_t cfa_off;
	uint8_t where[3];           /* rbp, rsp, return address */
	int64_t off[3];
};
struct gt_cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc, has_z, signal;
	const uint8_t *insns, *end;
};

GT_INLINE int reg_index(uint64_t reg)
{
	return reg == GT_REG_RBP ? 0 : reg == GT_REG_RSP ? 1 : reg == GT_REG_RA ? 2 : -1;
}

#define GT_CFI_STATES 8
/* Runs the instructions of r while the location stays at or below pc (the whole of them
 * when pc is ~0: a CIE's).  0 when libunwind would fail on them or they need what the
 * walk here cannot do. */
static int run_cfi(struct gt_cfi_reader *r, const struct gt_cie *cie, uintptr_t loc, uintptr_t pc,
		   struct gt_cfi_regs *regs, const struct gt_cfi_regs *initial)
{
	struct gt_cfi_regs saved[GT_CFI_STATES];
	unsigned depth = 0;
	while (loc <= pc && r->p < r->end && !r->bad) {
		uint8_t op = *r->p++, low = op & 0x3f;
		uint64_t reg = 0;
		int64_t off = 0;
		uint8_t where = GT_W_OTHER;
		int i;
		switch (op & 0xc0 ? op & 0xc0 : op) {
		case 0x40: loc += low * cie->code_align; continue;                  /* advance_loc */
		case 0x02: loc += read_fixed(r, 1) * cie->code_align; continue;
		case 0x03: loc += read_fixed(r, 2) * cie->code_align; continue;
		case 0x04: loc += read_fixed(r, 4) * cie->code_align; continue;
		case 0x01: loc = read_encoded(r, cie->fde_enc); continue;           /* set_loc */
		case 0x00: continue;                                                 /* nop */
		case 0x2e: read_uleb(r); continue;                                   /* GNU_args_size */
		case 0x80: reg = low; off = (int64_t)read_uleb(r) * cie->data_align; where = GT_W_CFAREL; goto set;
		case 0x05: reg = read_uleb(r); off = (int64_t)read_uleb(r) * cie->data_align; where = GT_W_CFAREL; goto set;
		case 0x11: reg = read_uleb(r); off = read_sleb(r) * cie->data_align; where = GT_W_CFAREL; goto set;
		case 0x2f: reg = read_uleb(r); off = -(int64_t)read_uleb(r) * cie->data_align; where = GT_W_CFAREL; goto set;
		case 0xc0: reg = low; goto restore;
		case 0x06: reg = read_uleb(r); goto restore;
		case 0x07: reg = read_uleb(r); where = GT_W_UNDEF; goto set;
		case 0x08: reg = read_uleb(r); where = GT_W_SAME; goto set;
		case 0x09: reg = read_uleb(r); read_uleb(r); goto set;               /* register */
		case 0x10: reg = read_uleb(r); goto expression;
		case 0x16: reg = read_uleb(r); goto expression;                      /* val_expression */
		case 0x0a:                                                           /* remember_state */
			if (depth == GT_CFI_STATES)
				return 0;
			saved[depth++] = *regs;
			continue;
		case 0x0b:                                                           /* restore_state */
			if (!depth)
				return 0;
			*regs = saved[--depth];
			continue;
		case 0x0c: regs->cfa_reg = (uint8_t)read_uleb(r); regs->cfa_off = (int64_t)read_uleb(r); goto cfa;
		case 0x12: regs->cfa_reg = (uint8_t)read_uleb(r); regs->cfa_off = read_sleb(r) * cie->data_align; goto cfa;
		case 0x0d: regs->cfa_reg = (uint8_t)read_uleb(r); goto cfa;
		case 0x0e: regs->cfa_off = (int64_t)read_uleb(r); continue;
		case 0x13: regs->cfa_off = read_sleb(r) * cie->data_align; continue;
		case 0x0f: {                                                         /* def_cfa_expression */
			uint64_t len = read_uleb(r);
			if (len > (uint64_t)(r->end - r->p))
				return 0;
			r->p += len;
			regs->cfa_other = 1;
			continue;
		}
		default:
			return 0; /* val_offset and the rest: libunwind has no case for them */
		}
	cfa:
		regs->cfa_other = 0;
		if (regs->cfa_reg >= GT_REGS_KNOWN)
			return 0;
		continue;
	restore:
		if (reg >= GT_REGS_KNOWN || !initial)
			return 0;
		if ((i = reg_index(reg)) >= 0)
			regs->where[i] = initial->where[i], regs->off[i] = initial->off[i];
		continue;
	expression: {
		uint64_t len = read_uleb(r);
		if (len > (uint64_t)(r->end - r->p))
			return 0;
		r->p += len;
	} /* and the register's rule is one the walk here cannot follow */
	set:
		if (reg >= GT_REGS_KNOWN)
			return 0;
		if ((i = reg_index(reg)) >= 0)
			regs->where[i] = where, regs->off[i] = off;
	}
	return !r->bad;
}

/* The CIE at p (an .eh_frame CIE: id 0, versions 1 and 3, augmentations z, R, P, L, S) */
static int read_cie(const uint8_t *p, struct gt_cie *cie)
{
	struct gt_cfi_reader r = {p, p + 4, 0};
	uint64_t len = read_fixed(&r, 4);
	if (len == 0 || len >= 0xfffffff0u)
		return 0;
	r.end = r.p + len;
	if (read_fixed(&r, 4) != 0)
		return 0;
	unsigned version = (unsigned)read_fixed(&r, 1);
	if (version != 1 && version != 3)
		return 0;
	const char *aug = (const char *)r.p;
	while (r.p < r.end && *r.p)
		r.p++;
	if (r.p++ >= r.end)
		return 0;
	*cie = (struct gt_cie){.fde_enc = 0};
	cie->code_align = read_uleb(&r);
	cie->data_align = read_sleb(&r);
	uint64_t ra = version == 1 ? read_fixed(&r, 1) : read_uleb(&r);
	if (ra != GT_REG_RA)
		return 0;
	const uint8_t *aug_end = NULL;
	if (aug[0] == 'z') {
		cie->has_z = 1;
		uint64_t n = read_uleb(&r);
		if (n > (uint64_t)(r.end - r.p))
			return 0;
		aug_end = r.p + n;
	}
	for (const char *a = aug + cie->has_z; *a && !r.bad; a++) {
		if (*a == 'R')
			cie->fde_enc = (uint8_t)read_fixed(&r, 1);
		else if (*a == 'L')
			read_fixed(&r, 1);
		else if (*a == 'P') /* the personality routine: skipped, its size is all we need */
			read_encoded(&r, (uint8_t)read_fixed(&r, 1) & 0x0f);
		else if (*a == 'S')
			cie->signal = 1;
		else
			return 0;
	}
	if (aug_end)
		r.p = aug_end;
	cie->insns = r.p;
	cie->end = r.end;
	return !r.bad && r.p <= r.end;
}

/* The rule of the frame a return address pc leads to, from the FDE at fde (pc - 1 within
 * it, as libunwind looks it up) */
static uint64_t rule_from_fde(const uint8_t *fde, uintptr_t pc)
{
	struct gt_cfi_reader r = {fde, fde + 8, 0};
	uint64_t len = read_fixed(&r, 4);
	if (len == 0 || len >= 0xfffffff0u)
		return GT_RULE_LIBUNWIND;
	r.end = r.p + len;
	const uint8_t *id_at = r.p;
	uint32_t cie_off = (uint32_t)read_fixed(&r, 4);
	struct gt_cie cie;
	if (!cie_off || !read_cie(id_at - cie_off, &cie) || cie.signal)
		return GT_RULE_LIBUNWIND;
	uintptr_t start = read_encoded(&r, cie.fde_enc);
	uintptr_t range = read_encoded(&r, cie.fde_enc & 0x0f);
	if (r.bad || pc - 1 < start || pc - 1 - start >= range)
		return GT_RULE_LIBUNWIND;
	if (cie.has_z) {
		uint64_t n = read_uleb(&r);
		if (n > (uint64_t)(r.end - r.p))
			return GT_RULE_LIBUNWIND;
		r.p += n;
	}
	struct gt_cfi_regs regs = {.cfa_other = 1}, initial; /* no CFA until the CIE says */
	struct gt_cfi_reader cr = {cie.insns, cie.end, 0};
	if (!run_cfi(&cr, &cie, 0, ~(uintptr_t)0, &regs, NULL))
		return GT_RULE_LIBUNWIND;
	initial = regs;
	if (!run_cfi(&r, &cie, start, pc - 1, &regs, &initial))
		return GT_RULE_LIBUNWIND;
	/* libunwind's standard frame (x86_64/Gstash_frame.c), or the end of the stack */
	int64_t rbp = regs.off[0], rsp = regs.off[1];
	if (regs.cfa_other || (regs.cfa_reg != GT_REG_RBP && regs.cfa_reg != GT_REG_RSP) ||
	    regs.cfa_off <= -(1 << 28) || regs.cfa_off >= (1 << 28))
		return GT_RULE_LIBUNWIND;
	if (regs.where[1] == GT_W_OTHER ||
	    (regs.where[1] == GT_W_CFAREL && (rsp <= -(1 << 14) || rsp >= (1 << 14) || rsp == -1)))
		return GT_RULE_LIBUNWIND;
	if (regs.where[0] == GT_W_OTHER ||
	    (regs.where[0] == GT_W_CFAREL && (rbp <= -(1 << 14) || rbp >= (1 << 14) || rbp == -1)))
		return GT_RULE_LIBUNWIND;
	int on_rsp = regs.cfa_reg == GT_REG_RSP;
	if (regs.where[2] == GT_W_UNDEF || regs.where[0] == GT_W_UNDEF)
		return rule_word(GT_RULE_LAST, on_rsp, regs.cfa_off, -1);
	if (regs.where[2] != GT_W_CFAREL || regs.off[2] != -8)
		return GT_RULE_LIBUNWIND;
	return rule_word(GT_RULE_STANDARD, on_rsp, regs.cfa_off,
			 regs.where[0] == GT_W_CFAREL ? rbp : -1);
}

/* .eh_frame_hdr's binary search table (version 1, datarel sdata4 pairs) */
static const uint8_t *find_fde(const uint8_t *hdr, uintptr_t pc)
{
	if (hdr[0] != 1 || hdr[3] != 0x3b)
		return NULL;
	struct gt_cfi_reader r = {hdr + 4, hdr + 4 + 16, 0};
	read_encoded(&r, hdr[1]);
	uint64_t count = read_encoded(&r, hdr[2]);
	if (r.bad || (hdr[2] & 0x70) || !count)
		return NULL;
	const int32_t *table = (const int32_t *)r.p;
	uintptr_t base = (uintptr_t)hdr, target = pc - 1;
	uint64_t lo = 0, hi = count;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (base + (intptr_t)table[2 * mid] <= target)
			lo = mid;
		else
			hi = mid;
	}
	if (base + (intptr_t)table[2 * lo] > target)
		return NULL;
	return (const uint8_t *)(base + (intptr_t)table[2 * lo + 1]);
}

struct gt_rule_search {
	uintptr_t pc;
	uint64_t rule;
};

/* the object's loaded segments hold these n bytes at pc */
static int code_holds(const struct dl_phdr_info *info, uintptr_t pc, const uint8_t *code, size_t n)
{
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && pc >= lo && pc - lo + n <= ph->p_memsz)
			return !memcmp((const void *)pc, code, n);
	}
	return 0;
}

static int search_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct gt_rule_search *s = arg;
	uintptr_t target = s->pc - 1;
	const ElfW(Phdr) *eh = NULL;
	int inside = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && target >= lo && target - lo < ph->p_memsz)
			inside = 1;
		else if (ph->p_type == PT_GNU_EH_FRAME)
			eh = ph;
	}
	if (!inside)
		return 0;
	/* __restore_rt: mov $15 (rt_sigreturn), %rax; syscall */
	static const uint8_t sigreturn[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
	if (code_holds(info, s->pc, sigreturn, sizeof sigreturn)) {
		s->rule = GT_RULE_SIGRETURN;
		return 1;
	}
	const uint8_t *fde = eh ? find_fde((const uint8_t *)(info->dlpi_addr + eh->p_vaddr), s->pc) : NULL;
	s->rule = fde ? rule_from_fde(fde, s->pc) : GT_RULE_LIBUNWIND;
	return 1;
}

uintptr_t gt_frame_rule_learn(uintptr_t pc)
{
	struct gt_rule_search s = {pc, GT_RULE_LIBUNWIND};
	uint64_t gen = gt_load(&gt_rules_gen);
	gt_walk_objects(search_object, &s);
	return (uintptr_t)rule_keep(pc, gen, s.rule);
}

/* ---- the walk ---------------------------------------------------------------------- */

/* One frame up by a standard rule: the caller's return address, stack and frame pointers.
 * 0 when the CFA does not climb the stack (libunwind reads such words unchecked: the walk
 * leaves them to it). */
GT_INLINE int rule_step(uint64_t rule, uintptr_t *pc, uintptr_t *sp, uintptr_t *bp)
{
	uintptr_t cfa = (GT_RULE_ON_RSP(rule) ? *sp : *bp) + (uintptr_t)GT_RULE_CFA_OFF(rule);
	if (cfa <= *sp || (cfa & 7))
		return 0;
	*pc = ((const uintptr_t *)cfa)[-1];
	if (GT_RULE_RBP_OFF(rule) != -1)
		*bp = *(const uintptr_t *)(cfa + (uintptr_t)GT_RULE_RBP_OFF(rule));
	*sp = cfa;
	return 1;
}

/* the walk, with its words kept (record: words has room for depth frames) or not */
GT_INLINE int walk(const uintptr_t *frame, unsigned depth, uintptr_t *pcs,
		   struct gt_walk_words *words, uintptr_t *missing, const int record)
{
	uint64_t gen = gt_load(&gt_rules_gen);
	uintptr_t pc = frame[1], sp = (uintptr_t)frame + 16, bp = frame[0];
	uintptr_t at = pc; /* whose rule: a return address, an interrupted instruction's + 1 */
	unsigned n = 0, k = 0;
	/* the words the frames depend on: each return address, and a saved frame pointer
	 * once a CFA is found from it */
	const uintptr_t *bp_at = frame;
	int bp_kept = 0, signal_frame = 0;
	if (record)
		words->gen = gen, words->at[k] = frame + 1, words->val[k++] = pc;
	/* the hook's caller as libunwind finds it when it steps out of the hook's frame */
	while (pc >= 0x4000) {
		pcs[n++] = pc;
		if (n == depth)
			break;
		if (at >> GT_PC_BITS)
			return GT_WALK_LIBUNWIND;
		uint64_t rule = rule_of(at, gen);
		if (rule == GT_RULE_SIGRETURN) {
			/* the kernel's ucontext follows the handler's return address */
			const char *uc = (const char *)sp;
			pc = *(const uintptr_t *)(uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]));
			sp = *(const uintptr_t *)(uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]));
			bp = *(const uintptr_t *)(uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]));
			at = pc + 1;
			signal_frame = 1; /* not made again from words */
			continue;
		}
		switch (GT_RULE_KIND(rule)) {
		case GT_RULE_STANDARD:
			break;
		case GT_RULE_LAST:
			goto out;
		case GT_RULE_UNKNOWN:
			*missing = at;
			return GT_WALK_MISSING;
		default:
			return GT_WALK_LIBUNWIND;
		}
		if (record && !GT_RULE_ON_RSP(rule) && !bp_kept)
			words->at[k] = bp_at, words->val[k++] = bp, bp_kept = 1;
		if (!rule_step(rule, &pc, &sp, &bp))
			return GT_WALK_LIBUNWIND;
		at = pc;
		if (record) {
			words->at[k] = (const uintptr_t *)sp - 1, words->val[k++] = pc;
			if (GT_RULE_RBP_OFF(rule) != -1)
				bp_at = (const uintptr_t *)(sp + (uintptr_t)GT_RULE_RBP_OFF(rule)), bp_kept = 0;
		}
	}
out:
	if (record)
		words->n = signal_frame ? 0 : k;
	return (int)n;
}

int gt_frame_rules_walk(const uintptr_t *frame, unsigned depth, uintptr_t *pcs,
			struct gt_walk_words *words, uintptr_t *missing)
{
	if (!gt_rules)
		return GT_WALK_LIBUNWIND;
	if (!words || depth > GT_WALK_WORDS_FRAMES) {
		if (words)
			words->n = 0;
		return walk(frame, depth, pcs, NULL, missing, 0);
	}
	return walk(frame, depth, pcs, words, missing, 1);
}

void gt_frame_rules_forget(void) { gt_add(&gt_rules_gen, 1); }

int gt_frame_rules_own(uintptr_t lo, uintptr_t hi)
{
	uintptr_t r = (uintptr_t)gt_rules;
	return r && lo < r + GT_RULE_SLOTS * sizeof(struct gt_rule_slot) && hi > r;
}

void gt_frame_rules_setup(void)
{
	if (gt_rules)
		return;
	long r = gt_sys((long)SYS_mmap, 0, GT_RULE_SLOTS * sizeof(struct gt_rule_slot),
			PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gt_rules = (r < 0 && r > -4096) ? NULL : (struct gt_rule_slot *)r;
}

#else

int gt_frame_rules_walk(const uintptr_t *frame, unsigned depth, uintptr_t *pcs,
			struct gt_walk_words *words, uintptr_t *missing)
{
	(void)frame, (void)depth, (void)pcs, (void)words, (void)missing;
	return GT_WALK_LIBUNWIND;
}

uintptr_t gt_frame_rule_learn(uintptr_t pc)
{
	(void)pc;
	return 0;
}

void gt_frame_rules_forget(void) {}

int gt_frame_rules_own(uintptr_t lo, uintptr_t hi)
{
	(void)lo, (void)hi;
	return 0;
}

void gt_frame_rules_setup(void) {}

#endif
