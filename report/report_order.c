/* report_order: the lock-order inversions of a --locks=all capture, the cycles of the
 * encoder's lock-order graph (encoder.h, "the lock-order graph"), text and JSON
 * (report_internal.h).  Each says, as TSan does, which thread took which lock while holding
 * which, where it took both, and how often that order was taken. */
#include "report_internal.h"

#include <inttypes.h>
#include <string.h>

#include "names.h"

void gtr_order_fact(struct report *r, const struct gt_capture_record *cr,
		    const struct gt_tracker_change *change)
{
	uint8_t type = cr->rec->type;
	if (type == GT_LOCK_ACQUIRE || type == GT_LOCK_RELEASE) {
		r->lock_records = true;
		if (!r->order)
			r->order = gt_report_must(gt_lock_order_new());
	}
	if (!r->order)
		return;   /* before the first lock record no lock is known held: no order */
	gt_lock_order_fact(r->order, cr, change);   /* its losses: gt_lock_order_lost */
	if (!change->hold_began)
		return;
	/* a lock never waited on is named by where it was first taken (gtr_object_name) */
	bool found;
	uint64_t *stack = gt_report_must(gt_u64map_slot(&r->first_use, change->hold.obj, &found));
	if (!found)
		*stack = change->hold.stack;
}

void gtr_order_free(struct report *r)
{
	gt_lock_order_free(r->order);
}

/* The namer of the encoder's one-line text: the report's names and stacks. */
struct namer_ctx {
	struct report *r;
	char name[GT_REPORT_NAME_MAX];
};

static const char *lock_name(void *ctx, uint8_t kind, uint64_t obj)
{
	struct namer_ctx *n = ctx;
	(void)kind;
	return gtr_object_name(n->r, obj, n->name, sizeof n->name);
}

/* Where stack took a lock: the program's own call (gt_sym_own_frame: not the inlined code of
 * std::mutex::lock), as the conversion's summary says it. */
static const char *site_name(void *ctx, uint32_t capture, uint32_t stack, char *buf, size_t size)
{
	struct namer_ctx *n = ctx;
	struct gt_frame frames[REPORT_MAX_FRAMES];
	(void)capture;
	size_t k = gtr_frames_of(n->r, stack, frames);
	if (!k)
		return NULL;
	gtr_frame_text(&frames[gt_sym_own_frame(frames, k)], buf, size);
	return buf;
}

static void cycle_line(struct report *r, size_t i, char *buf, size_t size)
{
	struct namer_ctx ctx = {.r = r};
	struct gt_lock_namer namer = {lock_name, site_name, &ctx};
	gt_lock_order_cycle_text(r->order, i, r->tracker, &namer, buf, size);
}

static void thread_text(struct report *r, const struct gt_lock_edge *e, char *buf, size_t size)
{
	const struct gt_tracked_thread *t = gt_tracker_thread(r->tracker, e->capture, e->thread);
	const char *name = gt_tracker_own_name(r->tracker, e->capture, t ? t->name : e->thread_name);
	if (name)
		snprintf(buf, size, "%.16s (thread %u)", name, e->thread);
	else
		snprintf(buf, size, "thread %u", e->thread);
}

static const char *mode_text(uint8_t kind)
{
	return kind == GT_BK_RWLOCK_RD ? " (read)" : kind == GT_BK_RWLOCK_WR ? " (write)" : "";
}

static void text_edge(FILE *out, struct report *r, const struct gt_lock_edge *e)
{
	char who[64], from[GT_REPORT_NAME_MAX], to[GT_REPORT_NAME_MAX];
	thread_text(r, e, who, sizeof who);
	/* never taken in that order: each wait for it timed out, or the capture ended in it */
	fprintf(out, "     %s %s %s %s%s%s at:\n", who, e->count ? "took" : "waited (never got it) for",
		gt_report_block_kind_name(e->to_kind), gtr_object_name(r, e->to, to, sizeof to),
		mode_text(e->to_kind), e->to_flags & GT_LOCK_COND ? " back from a condition wait" : "");
	gtr_text_stack(out, r, e->to_stack, "         ");
	fprintf(out, "       holding %s %s%s, taken at:\n", gt_report_block_kind_name(e->from_kind),
		gtr_object_name(r, e->from, from, sizeof from), mode_text(e->from_kind));
	gtr_text_stack(out, r, e->from_stack, "         ");
	if (e->count > 1)
		fprintf(out, "       (this order %" PRIu64 " times%s)\n", e->count,
			e->other_threads ? ", by other threads too" : "");
}

void gtr_order_text(FILE *out, struct report *r)
{
	if (!r->lock_records) {
		fputs("\nLock-order inversions: not looked for (they need gotrace run --locks=all)\n", out);
		return;
	}
	size_t n = gt_lock_order_cycles(r->order);
	uint64_t lost = gt_lock_order_lost(r->order);
	if (!n) {
		size_t edges = gt_lock_order_edges(r->order);
		fprintf(out, "\nLock-order inversions: none (%zu lock order%s, no cycle)\n", edges,
			edges == 1 ? "" : "s");
	} else {
		fprintf(out, "\nLock-order inversions (locks taken in orders that make a cycle: each "
			"can deadlock one day)\n");
	}
	for (size_t i = 0; i < n; i++) {
		char line[4096];
		cycle_line(r, i, line, sizeof line);
		fprintf(out, "  %zu. lock-order inversion: %s\n", i + 1, line);
		const struct gt_lock_edge *edges[GT_CYCLE_MAX];
		size_t k = gt_lock_order_cycle(r->order, i, edges);
		for (size_t j = 0; j < k; j++)
			text_edge(out, r, edges[j]);
		if (gt_lock_order_one_thread(r->order, i))
			fputs("     one thread took every order: alone it cannot deadlock on them, two "
			      "threads running this code can\n", out);
	}
	if (lost)
		fprintf(out, "  %" PRIu64 " lock orders not kept (out of memory, or a thread held more "
			"than %u locks)\n", lost, GT_LOCK_ORDER_DEPTH);
}

static void json_lock(FILE *out, struct report *r, uint8_t kind, uint64_t obj, uint32_t stack)
{
	char name[GT_REPORT_NAME_MAX];
	fprintf(out, "{\"kind\":\"%s\",\"read\":%s,\"object\":\"%#" PRIx64 "\",\"object_name\":",
		gt_report_block_kind_name(kind), kind == GT_BK_RWLOCK_RD ? "true" : "false", obj);
	gt_report_json_string(out, gtr_object_name(r, obj, name, sizeof name));
	fputs(",\"frames\":", out);
	gtr_json_stack(out, r, stack);
	fputc('}', out);
}

static void json_edge(FILE *out, struct report *r, const struct gt_lock_edge *e)
{
	const struct gt_tracked_thread *t = gt_tracker_thread(r->tracker, e->capture, e->thread);
	fprintf(out, "{\"thread\":{\"serial\":%u,\"tid\":%u,\"name\":", e->thread, t ? t->tid : 0);
	gt_report_json_string(out, t ? t->name : e->thread_name);
	uint64_t at = gt_clock_fitted_ns(&r->clock, gt_clock_ns(&r->clock, e->tsc));
	fprintf(out, "},\"at_ns\":%" PRIu64 ",\"count\":%" PRIu64 ",\"other_threads\":%s,"
		"\"cond_wait\":%s,\"held\":", at, e->count, e->other_threads ? "true" : "false",
		e->to_flags & GT_LOCK_COND ? "true" : "false");
	json_lock(out, r, e->from_kind, e->from, e->from_stack);
	fputs(",\"taken\":", out);
	json_lock(out, r, e->to_kind, e->to, e->to_stack);
	fputc('}', out);
}

void gtr_order_json(FILE *out, struct report *r)
{
	fprintf(out, ",\"lock_order\":{\"recorded\":%s", r->lock_records ? "true" : "false");
	if (!r->lock_records) {
		fputs(",\"edges\":0,\"lost\":0,\"inversions\":[]}", out);
		return;
	}
	fprintf(out, ",\"edges\":%zu,\"lost\":%" PRIu64 ",\"inversions\":[",
		gt_lock_order_edges(r->order), gt_lock_order_lost(r->order));
	for (size_t i = 0; i < gt_lock_order_cycles(r->order); i++) {
		char line[4096];
		cycle_line(r, i, line, sizeof line);
		fputs(i ? ",{\"text\":" : "{\"text\":", out);
		gt_report_json_string(out, line);
		fprintf(out, ",\"one_thread\":%s,\"edges\":[",
			gt_lock_order_one_thread(r->order, i) ? "true" : "false");
		const struct gt_lock_edge *edges[GT_CYCLE_MAX];
		size_t k = gt_lock_order_cycle(r->order, i, edges);
		for (size_t j = 0; j < k; j++) {
			if (j)
				fputc(',', out);
			json_edge(out, r, edges[j]);
		}
		fputs("]}", out);
	}
	fputs("]}", out);
}
