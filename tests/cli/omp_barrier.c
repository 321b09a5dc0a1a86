/* omp_barrier ROUNDS: two OpenMP threads meet at a barrier ROUNDS times; thread 0 works
 * before each one and thread 1 does not, so thread 1 waits there every round, inside
 * libgomp, on futexes libgomp calls inline (no hookable function).  With
 * OMP_WAIT_POLICY=passive it sleeps at once instead of spinning first.  stdout is the same
 * traced or not. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noipa)) static void work(long n)
{
	volatile long x = 0;
	for (long i = 0; i < n; i++)
		x += i;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int rounds = atoi(argv[1]);
#pragma omp parallel num_threads(2)
	for (int r = 0; r < rounds; r++) {
		if (omp_get_thread_num() == 0)
			work(1000000);
#pragma omp barrier
	}
	printf("%d rounds\n", rounds);
	return 0;
}
