/* omp_uneven ROUNDS MS CPUFILE: an OpenMP team of 4 threads; in each round thread k works
 * (k + 1) * MS milliseconds of its own CPU time, then all meet at a barrier, which libgomp
 * waits in with its own futex syscalls (no hook sees them).  Each thread writes
 * "INDEX CPU_NS" into CPUFILE, the CPU time it measured itself (CLOCK_THREAD_CPUTIME_ID);
 * stdout is the same traced or not.  Run with OMP_WAIT_POLICY=passive: a barrier waits off
 * its CPU at once instead of spinning first. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int rounds = atoi(argv[1]);
	long ms = atol(argv[2]);
	FILE *f = fopen(argv[3], "w");
	if (rounds < 1 || ms < 1 || !f)
		return 2;
	int team = 0;
#pragma omp parallel num_threads(4)
	{
		int k = omp_get_thread_num();
		volatile uint64_t x = (uint64_t)k;
		for (int r = 0; r < rounds; r++) {
			uint64_t end = thread_cpu_ns() + (uint64_t)(k + 1) * (uint64_t)ms * 1000000u;
			while (thread_cpu_ns() < end)
				for (int i = 0; i < 10000; i++)
					x = x * 6364136223846793005u + 1442695040888963407u;
#pragma omp barrier
		}
		uint64_t used = thread_cpu_ns();
#pragma omp critical
		{
			fprintf(f, "%d %llu\n", k, (unsigned long long)used);
			team = omp_get_num_threads();
		}
	}
	printf("omp_uneven: %d threads, %d rounds\n", team, rounds);
	return fclose(f) == 0 ? 0 : 1;
}
