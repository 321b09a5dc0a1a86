/* Bad pointers get the kernel's answer (issue 28, item 5): every case of gt-badptr, given a
 * NULL pointer and one to a page mapped PROT_NONE, ends traced as it ends untraced: the same
 * return value and errno, or the same signal.  A hook reads what the program passed only
 * once it can be read (stacks.c, gt_readable). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "traced_run.h"

static struct run plain, traced;

static void teardown(void)
{
	run_cleanup(&plain);
	run_cleanup(&traced);
}

TestSuite(badptr, .fini = teardown, .timeout = 240);

Test(badptr, same_answer_as_untraced)
{
	static char list[65536], failures[16384];
	const char *prog = test_program("gt-badptr");
	char path[4096];
	snprintf(path, sizeof path, "%s", prog);
	const char *largv[] = {path, "list", NULL};
	cr_assert_eq(run_program(&plain, 0, largv, NULL), 0);
	snprintf(list, sizeof list, "%s", plain.out);
	run_cleanup(&plain);
	size_t n = 0, failed = 0, faulted = 0, efault = 0;
	failures[0] = 0;
	for (char *save = NULL, *name = strtok_r(list, "\n", &save); name;
	     name = strtok_r(NULL, "\n", &save)) {
		for (int none = 0; none < 2; none++) {
			const char *argv[] = {path, name, none ? "none" : "null", NULL};
			memset(&plain, 0, sizeof plain);
			memset(&traced, 0, sizeof traced);
			const char *diff = run_twins(&plain, &traced, argv, NULL);
			n++;
			faulted += WIFSIGNALED(plain.status);
			efault += strstr(plain.out, "errno=EFAULT") != NULL;
			if (diff) {
				failed++;
				size_t used = strlen(failures);
				snprintf(failures + used, sizeof failures - used, "%s %s: %s\n", name,
					 argv[2], diff);
			}
			run_cleanup(&plain);
			run_cleanup(&traced);
		}
	}
	cr_assert_geq(n, 40, "only %zu cases", n);
	cr_assert_gt(faulted, 0, "no case faults untraced: the table tests no signal");
	cr_assert_gt(efault, 20, "%zu cases fail EFAULT untraced", efault);
	cr_assert_eq(failed, 0, "%zu of %zu cases differ traced:\n%s", failed, n, failures);
}
