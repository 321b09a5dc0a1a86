/* The public header compiled as strict ISO C (-std=c11 -pedantic). */
#include "symbolizer/symbolizer.h"

int main(void)
{
	struct gt_symbolizer *sym = gt_sym_new(NULL);
	if (!sym)
		return 1;
	struct gt_frame f = gt_sym_function(sym, 0x1000);
	int ok = f.func != NULL && f.file != NULL && f.pc == 0x1000;
	gt_sym_free(sym);
	return ok ? 0 : 1;
}
