/* burner MS: a thread named "cpu-hog" spends MS milliseconds of its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID) in burn_known_function, built -O2 without frame pointers, so
 * that a CPU sample of it can only be named by unwinding its copied stack with DWARF CFI;
 * the main thread waits for it in pthread_join.  stdout is the same traced or not. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* noipa: neither inlined nor cloned, so its name is the frame's */
__attribute__((noipa)) unsigned long burn_known_function(long ms)
{
	volatile unsigned long x = 1;
	long end = cpu_ms() + ms;
	while (cpu_ms() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

static void *burner(void *arg)
{
	pthread_setname_np(pthread_self(), "cpu-hog");
	unsigned long v = burn_known_function(*(long *)arg);
	return (void *)(v | 1);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	long ms = strtol(argv[1], NULL, 10);
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, burner, &ms) != 0 || pthread_join(t, &r) != 0 || r == NULL)
		return 1;
	printf("burnt %ld ms\n", ms);
	return 0;
}
