/* The format table (encoder/encoder.h), held to what Go's internal/trace/version says of
 * a header ("go 1.%d trace" and NULs, 16 bytes) and to what each writer writes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "encoder/encoder.h"
#include "encoder/gowire.h"

Test(trace_format, names_headers_and_versions_agree)
{
	int defaults = 0;
	for (int f = 0; f < GT_FORMAT_COUNT; f++) {
		const struct gt_trace_format_desc *d = &gt_trace_formats[f];
		cr_assert_eq((int)d->format, f);
		unsigned minor = 0;
		cr_assert_eq(sscanf(d->name, "go1.%u", &minor), 1, "%s", d->name);
		char header[GT_TRACE_HEADER_BYTES] = {0};
		snprintf(header, sizeof header, "go 1.%u trace", minor);
		cr_assert_eq(memcmp(d->header, header, sizeof header), 0, "%s: header", d->name);
		cr_assert_eq(minor, d->go_from, "%s: first read by its own release", d->name);
		cr_assert(!d->go_to || d->go_to >= d->go_from);
		cr_assert(!d->go_converted_from || (d->go_to && d->go_converted_from > d->go_to));
		cr_assert_not_null(d->open);
		for (int g = 0; g < f; g++)
			cr_assert_str_neq(d->name, gt_trace_formats[g].name);
		defaults += d->is_default;
	}
	cr_assert_eq(defaults, 1, "exactly one default");
	cr_assert(gt_trace_format_default()->is_default);
	/* a zeroed gt_convert_options writes go1.19 */
	cr_assert_str_eq(gt_trace_format_of(0)->name, "go1.19");
	cr_assert_eq(gt_trace_format_of(GT_FORMAT_COUNT), gt_trace_format_default());
}

Test(trace_format, looked_up_by_name_with_or_without_go)
{
	for (int f = 0; f < GT_FORMAT_COUNT; f++) {
		const char *name = gt_trace_formats[f].name;
		cr_assert_eq(gt_trace_format_named(name), &gt_trace_formats[f]);
		cr_assert_eq(gt_trace_format_named(name + 2), &gt_trace_formats[f]);
	}
	cr_assert_str_eq(gt_trace_format_default()->name, "go1.22");
	const char *bad[] = {"go1.18", "", "go", "1.2", "go1.22x", "GO1.22", NULL};
	for (const char **b = bad; *b; b++)
		cr_assert_null(gt_trace_format_named(*b), "%s", *b);
	cr_assert_null(gt_trace_format_named(NULL));
}

Test(trace_format, each_writer_writes_its_header)
{
	for (int f = 0; f < GT_FORMAT_COUNT; f++) {
		const struct gt_trace_format_desc *d = &gt_trace_formats[f];
		FILE *tmp = tmpfile();
		cr_assert_not_null(tmp);
		struct gt_wire *w = d->open(fileno(tmp), 2, NULL);
		cr_assert_not_null(w, "%s", d->name);
		cr_assert_eq(gt_wire_finish(w, 1000000000u), 0);
		gt_wire_free(w);
		char got[GT_TRACE_HEADER_BYTES];
		cr_assert_eq(pread(fileno(tmp), got, sizeof got, 0), (ssize_t)sizeof got);
		cr_assert_eq(memcmp(got, d->header, sizeof got), 0, "%s", d->name);
		fclose(tmp);
	}
}
