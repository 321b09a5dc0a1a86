/* offcpu: see offcpu.h. */
#include "offcpu.h"

#include <gotrace/capture.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#include "common/grow.h"
#include "common/hash.h"
#include "common/u64map.h"
#include "kernel/reader.h"
#include "kernel/samples.h"
#include "symbolizer/symbolizer.h"

#define OFFCPU_FRAMES 16u   /* shown per stack: the wait is at the inner end */

struct collect {
	const struct gt_kernel_file *f;
	uint32_t pid;
	struct gt_symbolizer *sym;
	struct gt_offcpu *o;
	struct gt_kernel_index outs;   /* the switch-outs: which ones were preemptions */
	struct gt_u64map index;   /* hash of the frames text -> index + 1 (chained by probing) */
	size_t cap;
};

static void add_group(struct collect *c, char *text)
{
	uint64_t h = gt_hash_bytes(text, strlen(text));
	for (;; h++) {
		bool found;
		uint64_t *slot = gt_report_must(gt_u64map_slot(&c->index, h, &found));
		if (found && strcmp(c->o->v[*slot - 1].frames, text) != 0)
			continue;   /* another stack with that hash: the next key */
		if (found) {
			c->o->v[*slot - 1].count++;
			free(text);
			return;
		}
		if (!gt_grow(&c->o->v, &c->cap, c->o->n + 1, sizeof *c->o->v))
			gt_report_must(NULL);
		c->o->v[c->o->n] = (struct gt_offcpu_group){ text, 1 };
		*slot = ++c->o->n;
		return;
	}
}

static void add_sample(uint64_t offset, uint64_t time, uint32_t kind, void *ctx)
{
	(void)time;
	struct collect *c = ctx;
	struct gt_kernel_sample k;
	if (kind != GT_KERNEL_EV_OFFCPU || !gt_kernel_sample_at(c->f, offset, &k) || k.pid != c->pid)
		return;
	const struct gt_kernel_at *out = gt_kernel_index_find(&c->outs, k.pid, k.tid, k.time,
							      GT_KERNEL_SWITCH_SLACK_NS);
	if (out != NULL && (out->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)) {
		c->o->preempted++;   /* not a wait: the thread was still runnable */
		return;
	}
	uint64_t pcs[GT_MAX_STACK_DEPTH];
	bool complete;
	size_t n = gt_kernel_sample_unwind(c->sym, &k, pcs, GT_MAX_STACK_DEPTH, &complete);
	if (!n)
		return;
	c->o->samples++;
	c->o->partial += !complete;
	struct gt_frame frames[OFFCPU_FRAMES];
	size_t k_frames = gt_sym_stack(c->sym, pcs, n, frames, OFFCPU_FRAMES);
	size_t len = 0, cap = 256;
	char *text = gt_report_must(malloc(cap));
	text[0] = '\0';
	for (size_t i = 0; i < k_frames; i++) {
		char line[1200];
		gt_report_frame_text(frames[i].func, frames[i].file, frames[i].line, line, sizeof line);
		size_t l = strlen(line);
		while (len + l + 2 > cap)
			text = gt_report_must(realloc(text, cap *= 2));
		memcpy(text + len, line, l);
		len += l;
		text[len++] = '\n';
		text[len] = '\0';
	}
	add_group(c, text);
}

static int by_count(const void *a, const void *b)
{
	const struct gt_offcpu_group *x = a, *y = b;
	return x->count != y->count ? (x->count < y->count ? 1 : -1) : strcmp(x->frames, y->frames);
}

void gt_offcpu_collect(const char *path, uint32_t pid, struct gt_symbolizer *sym,
		       struct gt_offcpu *o)
{
	*o = (struct gt_offcpu){ 0 };
	struct gt_kernel_file f;
	struct gt_kernel_counts counts = { 0 };
	char err[256];
	if (sym == NULL || gt_kernel_open(path, &f, err, sizeof err) != 0)
		return;
	struct collect c = { .f = &f, .pid = pid, .sym = sym, .o = o };
	gt_kernel_index_build(&f, GT_KERNEL_EV_SWITCH, &c.outs);
	gt_kernel_walk(&f, NULL, add_sample, &c, &counts);
	gt_kernel_index_free(&c.outs);
	gt_u64map_free(&c.index);
	gt_kernel_close(&f);
	if (o->n > 1)
		qsort(o->v, o->n, sizeof *o->v, by_count);
}

void gt_offcpu_print_text(FILE *out, const struct gt_offcpu *o, unsigned top)
{
	if (!o->samples)
		return;
	fprintf(out, "\nOff-CPU stacks, from %" PRIu64 " samples of the kernel where a thread left "
		"its CPU to wait (waits the hooks do not see show here with their real frames; %"
		PRIu64 " more were preemptions)\n", o->samples, o->preempted);
	for (size_t i = 0; i < o->n && i < (top ? top : 10); i++) {
		fprintf(out, "  %" PRIu64 " switch-outs (%.1f%%) at:\n", o->v[i].count,
			100.0 * (double)o->v[i].count / (double)o->samples);
		for (const char *p = o->v[i].frames; *p;) {
			const char *nl = strchr(p, '\n');
			fprintf(out, "        %.*s\n", (int)(nl - p), p);
			p = nl + 1;
		}
	}
	if (o->partial)
		fprintf(out, "  (%" PRIu64 " of them with a partial stack)\n", o->partial);
}

void gt_offcpu_print_json(FILE *out, const struct gt_offcpu *o, unsigned top)
{
	if (!o->samples)
		return;
	fprintf(out, ",\"offcpu_stacks\":{\"samples\":%" PRIu64 ",\"partial\":%" PRIu64
		",\"preempted\":%" PRIu64 ",\"stacks\":[", o->samples, o->partial, o->preempted);
	for (size_t i = 0; i < o->n && i < (top ? top : 10); i++) {
		fprintf(out, "%s{\"count\":%" PRIu64 ",\"frames\":[", i ? "," : "", o->v[i].count);
		bool first = true;
		for (const char *p = o->v[i].frames; *p; first = false) {
			const char *nl = strchr(p, '\n');
			char line[1200];
			snprintf(line, sizeof line, "%.*s", (int)(nl - p), p);
			if (!first)
				fputc(',', out);
			gt_report_json_string(out, line);
			p = nl + 1;
		}
		fputs("]}", out);
	}
	fputs("]}", out);
}

void gt_offcpu_free(struct gt_offcpu *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].frames);
	free(o->v);
	*o = (struct gt_offcpu){ 0 };
}
