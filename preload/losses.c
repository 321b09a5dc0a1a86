/* Losses: table overflows counted and said in notices (losses.h). */
#include "losses.h"
#include "facts.h"


static _Atomic uint64_t gt_lost[GT_NOTICE_KINDS], gt_lost_said[GT_NOTICE_KINDS];

int gt_fact_notice(unsigned cpu, uint8_t kind, uint64_t value, uint64_t tsc)
{
	struct gt_p_notice p = {.value = value};
	uint64_t *r = gt_reserve(cpu, 16 + sizeof p, tsc);
	if (!r)
		return 0;
	gt_fill(r, 0, GT_NOTICE, kind, tsc, &p, sizeof p);
	return 1;
}

/* The losses of kind not yet said, into r (or into a record of our own when r is NULL). */
static void say_losses(uint8_t kind, uint64_t *r)
{
	uint64_t said = gt_load(&gt_lost_said[kind]), n = gt_load(&gt_lost[kind]);
	if (n <= said || !atomic_compare_exchange_strong(&gt_lost_said[kind], &said, n))
		return;
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	struct gt_p_notice p = {.value = n - said};
	if (r)
		gt_fill(r, 0, GT_NOTICE, kind, tsc, &p, sizeof p);
	else if (!gt_fact_notice(cpu, kind, n - said, tsc))
		atomic_fetch_sub(&gt_lost_said[kind], n - said); /* said next time */
}

void gt_lose(uint8_t kind)
{
	uint64_t n = gt_add(&gt_lost[kind], 1) + 1;
	if (!(n & (n - 1)))
		say_losses(kind, NULL);
}

void gt_losses_flush(uint64_t *(*reserve)(unsigned cpu, uint32_t nbytes))
{
	for (uint8_t k = GT_NOTICE_STACKS_LOST; k < GT_NOTICE_KINDS; k++) {
		unsigned cpu;
		gt_now(&cpu);
		uint64_t *r;
		if (gt_load(&gt_lost[k]) > gt_load(&gt_lost_said[k]) &&
		    (r = reserve(cpu, 16 + sizeof(struct gt_p_notice))))
			say_losses(k, r);
	}
}

void gt_losses_reset(void)
{
	for (unsigned k = 0; k < GT_NOTICE_KINDS; k++) {
		gt_store(&gt_lost[k], 0);
		gt_store(&gt_lost_said[k], 0);
	}
}
