/* hot_functions: see hot_functions.h. */
#include "hot_functions.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "common/grow.h"
#include "common/u64map.h"

static int by_heat(const void *a, const void *b)
{
	const struct gt_hot_fn *x = a, *y = b;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->func, y->func);
}

void gt_hot_collect(const struct gt_go_trace *t, struct gt_hot *hot)
{
	*hot = (struct gt_hot){ 0 };
	struct gt_u64map index = { 0 };  /* function name's string id -> index + 1 */
	size_t cap = 0;
	for (size_t i = 0; i < t->n_ev; i++) {
		if (t->ev[i].kind != GT_GO_CPU_SAMPLE)
			continue;
		hot->samples++;
		const struct gt_go_stack_def *s = gt_go_trace_stack(t, t->ev[i].stack);
		for (size_t k = 0; s != NULL && k < s->n; k++) {
			uint64_t func = s->frames[k].func;
			bool again = false;   /* a recursive function counts once per sample */
			for (size_t j = 0; j < k && !again; j++)
				again = s->frames[j].func == func;
			if (again)
				continue;
			bool found;
			uint64_t *slot = gt_report_must(gt_u64map_slot(&index, func, &found));
			if (!found) {
				if (!gt_grow(&hot->v, &cap, hot->n + 1, sizeof *hot->v))
					gt_report_must(NULL);
				hot->v[hot->n] = (struct gt_hot_fn){
					.func = gt_go_trace_string(t, func),
					.file = gt_go_trace_string(t, s->frames[k].file),
					.line = s->frames[k].line,
				};
				*slot = ++hot->n;
			}
			struct gt_hot_fn *f = &hot->v[*slot - 1];
			f->total++;
			f->self += k == 0;
		}
	}
	gt_u64map_free(&index);
	if (hot->n > 1)
		qsort(hot->v, hot->n, sizeof *hot->v, by_heat);
}

static double percent(uint64_t n, uint64_t of)
{
	return of ? 100.0 * (double)n / (double)of : 0;
}

void gt_hot_print_text(FILE *out, const struct gt_hot *hot, unsigned top)
{
	if (!hot->samples)
		return;
	fprintf(out, "\nHottest functions, from %" PRIu64 " CPU samples of the kernel (self: "
		"running it; total: it or what it called)\n   self   total  function\n",
		hot->samples);
	for (size_t i = 0; i < hot->n && i < (top ? top : 10); i++) {
		char text[1200];
		gt_report_frame_text(hot->v[i].func, hot->v[i].file, hot->v[i].line, text, sizeof text);
		fprintf(out, " %5.1f%%  %5.1f%%  %s\n", percent(hot->v[i].self, hot->samples),
			percent(hot->v[i].total, hot->samples), text);
	}
}

void gt_hot_print_json(FILE *out, const struct gt_hot *hot, unsigned top)
{
	if (!hot->samples)
		return;
	fprintf(out, ",\"hot_functions\":{\"samples\":%" PRIu64 ",\"functions\":[", hot->samples);
	for (size_t i = 0; i < hot->n && i < (top ? top : 10); i++) {
		fprintf(out, "%s{\"function\":", i ? "," : "");
		gt_report_json_string(out, hot->v[i].func);
		fputs(",\"file\":", out);
		gt_report_json_string(out, hot->v[i].file);
		fprintf(out, ",\"line\":%" PRIu64 ",\"self\":%" PRIu64 ",\"total\":%" PRIu64 "}",
			hot->v[i].line, hot->v[i].self, hot->v[i].total);
	}
	fputs("]}", out);
}

void gt_hot_free(struct gt_hot *hot)
{
	free(hot->v);
	*hot = (struct gt_hot){ 0 };
}
