/* A child exec'd with a chosen environment sees exactly it (issue 28, item 8): gt-env execs
 * itself with an empty, a NULL and a chosen environment, and through `env -i`;
 * traced, the child prints the same environ, getenv and /proc/self/environ entries as
 * untraced, and it is traced (a capture of its own image).  The exec hook names what it
 * adds in GOTRACE_HIDE; the child's constructor takes it out (child_env.c). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>
#include <sys/wait.h>

#include "traced_run.h"

static struct run plain, traced;

static void teardown(void)
{
	run_cleanup(&plain);
	run_cleanup(&traced);
}

TestSuite(env, .fini = teardown, .timeout = 60);

static const char *const modes[] = {"empty", "null", "chosen", "env-i"};

/* indices: the test runs in a process of its own, where a pointer of this one means nothing */
ParameterizedTestParameters(env, child_sees_its_environment)
{
	static int which[] = {0, 1, 2, 3};
	return cr_make_param_array(int, which, sizeof which / sizeof which[0]);
}

ParameterizedTest(int *which, env, child_sees_its_environment)
{
	const char *const *mode = &modes[*which];
	const char *argv[] = {test_program("gt-env"), *mode, NULL};
	const char *env[] = {"GT_ENV_TEST=1", NULL};
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0, "%s: status %#x: %s%s", *mode,
		  plain.status, plain.out, plain.err);
	cr_assert_null(diff, "%s: %s\nuntraced:\n%s\ntraced:\n%s", *mode, diff, plain.out, traced.out);
	cr_assert(strstr(plain.out, "getenv LD_PRELOAD"), "%s", plain.out);
	/* the exec'd child is traced: the program's image and the child's (and env's) */
	cr_assert_geq(run_count_captures(&traced), 2, "%s", traced.err);
}
