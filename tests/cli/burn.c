/* burn THREADS MS CPUFILE: THREADS threads each burn MS milliseconds of their own CPU time
 * (CLOCK_THREAD_CPUTIME_ID), with no call the hooks see until they end: more of them than
 * CPUs, only the kernel knows when each ran.  Each writes "INDEX CPU_NS TID" into CPUFILE,
 * the CPU time it measured itself; stdout is the same traced or not. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long burn_ms;
static FILE *cpu_file;
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *burn(void *arg)
{
	uintptr_t index = (uintptr_t)arg;
	uint64_t end = (uint64_t)burn_ms * 1000000u;
	volatile uint64_t x = index;
	while (thread_cpu_ns() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	uint64_t used = thread_cpu_ns();
	pthread_mutex_lock(&file_lock);
	fprintf(cpu_file, "%u %llu %d\n", (unsigned)index, (unsigned long long)used, (int)gettid());
	pthread_mutex_unlock(&file_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int n = atoi(argv[1]);
	burn_ms = atol(argv[2]);
	cpu_file = fopen(argv[3], "w");
	pthread_t t[64];
	if (n < 1 || n > 64 || burn_ms < 1 || !cpu_file)
		return 2;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, burn, (void *)(uintptr_t)i) != 0)
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("burn: %d threads burnt %ld ms of CPU each\n", n, burn_ms);
	return fclose(cpu_file) == 0 ? 0 : 1;
}
