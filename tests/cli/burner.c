/* burner MS [vdso|write]: a thread named "cpu-hog" spends MS milliseconds of its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID) in burn_known_function, built -O2 without frame pointers, so
 * that a CPU sample of it can only be named by unwinding its copied stack with DWARF CFI;
 * the main thread waits for it in pthread_join.  With "vdso" it spends them calling
 * clock_gettime(CLOCK_MONOTONIC) in burn_in_vdso instead: its samples land in the vDSO,
 * whose CFI alone leads to that function.  With "write" it writes one byte to /dev/null
 * at a time in burn_in_writes: traced, each write is a hooked call whose stack the tracer
 * takes.  stdout is the same traced or not. */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* its own CPU time checked every 1000 calls: ~1% of its samples outside the vDSO */
__attribute__((noipa)) unsigned long burn_in_vdso(long ms)
{
	struct timespec now;
	unsigned long calls = 0;
	for (long end = cpu_ms() + ms; cpu_ms() < end;)
		for (int i = 0; i < 1000; i++, calls++)
			clock_gettime(CLOCK_MONOTONIC, &now);
	return calls;
}

__attribute__((noipa)) unsigned long burn_in_writes(long ms)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	unsigned long writes = 0;
	for (long end = cpu_ms() + ms; fd >= 0 && cpu_ms() < end;)
		for (int i = 0; i < 100; i++)
			writes += write(fd, "x", 1) == 1;
	if (fd >= 0)
		close(fd);
	return writes;
}

static long burn_ms;
static const char *mode = "";

static void *burner(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "cpu-hog");
	unsigned long v = strcmp(mode, "vdso") == 0    ? burn_in_vdso(burn_ms)
			  : strcmp(mode, "write") == 0 ? burn_in_writes(burn_ms)
						       : burn_known_function(burn_ms);
	return (void *)(v | 1);
}

int main(int argc, char **argv)
{
	if (argc == 3)
		mode = argv[2];
	if ((argc != 2 && argc != 3) || (argc == 3 && strcmp(mode, "vdso") != 0 &&
					 strcmp(mode, "write") != 0))
		return 2;
	burn_ms = strtol(argv[1], NULL, 10);
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, burner, NULL) != 0 || pthread_join(t, &r) != 0 || r == NULL)
		return 1;
	printf("burnt %ld ms\n", burn_ms);
	return 0;
}
