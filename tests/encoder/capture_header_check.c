/* include/gotrace/capture.h compiled as strict ISO C (-std=c11 -pedantic) and, from
 * capture_header_check.cpp, as C++: the table's expansions included. */
#include "gotrace/capture.h"

int main(void)
{
	int ok = gt_fact_min_payload(GT_THREAD_NEW) == 16 && gt_fact_min_payload(GT_NONE) < 0 &&
		 gt_fact_name(GT_USER)[0] == 'U';
	return ok ? 0 : 1;
}
