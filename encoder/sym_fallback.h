/* Until symbolizer/ is built into the project (GT_NO_SYMBOLIZER), the encoder runs without
 * it: gt_sym_new returns NULL and frames are named by their address. */
#ifndef GOTRACE_SYM_FALLBACK_H
#define GOTRACE_SYM_FALLBACK_H

#include "symbolizer.h"

#ifdef GT_NO_SYMBOLIZER
static inline struct gt_symbolizer *gt_sym_new_or_null(const struct gt_sym_options *opt)
{
	(void)opt;
	return NULL;
}
#define gt_sym_new gt_sym_new_or_null
#define gt_sym_free(s) ((void)(s))
#define gt_sym_stack(s, pcs, n, out, max) ((void)(s), (void)(pcs), (void)(n), (void)(out), (void)(max), (size_t)0)
#define gt_sym_function(s, e) ((void)(s), (struct gt_frame){(e), "?", "?", 0})
#define gt_sym_add_module(s, p, b, bl, bias, lo, hi, f) \
	((void)(s), (void)(p), (void)(b), (void)(bl), (void)(bias), (void)(lo), (void)(hi), (void)(f))
#endif

#endif
