/* trace_format: the table of trace formats (encoder.h). */
#include "encoder.h"

#include <string.h>

#include "gowire.h"

const struct gt_trace_format_desc gt_trace_formats[GT_FORMAT_COUNT] = {
#define GT_TRACE_FORMAT_DESC(id, value, name, header, from, to, conv, other, dflt, open) \
	[GT_FORMAT_##id] = {GT_FORMAT_##id, name, header, from, to, conv, other, dflt, open},
	GT_TRACE_FORMATS(GT_TRACE_FORMAT_DESC)
#undef GT_TRACE_FORMAT_DESC
};

const struct gt_trace_format_desc *gt_trace_format_named(const char *name)
{
	if (!name)
		return NULL;
	for (int f = 0; f < GT_FORMAT_COUNT; f++) {
		const char *own = gt_trace_formats[f].name;
		/* "1.22" too: the version without the "go" */
		if (!strcmp(name, own) || !strcmp(name, own + 2))
			return &gt_trace_formats[f];
	}
	return NULL;
}

const struct gt_trace_format_desc *gt_trace_format_default(void)
{
	for (int f = 0; f < GT_FORMAT_COUNT; f++)
		if (gt_trace_formats[f].is_default)
			return &gt_trace_formats[f];
	return &gt_trace_formats[0];
}

const struct gt_trace_format_desc *gt_trace_format_of(enum gt_trace_format format)
{
	if ((int)format < 0 || format >= GT_FORMAT_COUNT)
		return gt_trace_format_default();
	return &gt_trace_formats[format];
}
