// The public header from C++: it compiles, and its functions link with C linkage.
#include "symbolizer/symbolizer.h"

int main()
{
	struct gt_symbolizer *sym = gt_sym_new(nullptr);
	if (!sym)
		return 1;
	struct gt_sym_stats st;
	gt_sym_stats(sym, &st);
	gt_sym_free(sym);
	return st.pcs_looked_up == 0 ? 0 : 1;
}
