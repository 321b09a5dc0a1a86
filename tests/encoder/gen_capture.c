/* gen_capture: writes a large synthetic capture for scripts/bench-encoder.
 *
 *   gen_capture OUT SIZE_MB [THREADS] [CPUS] [STACKS]
 *
 * A busy program: THREADS threads on CPUS CPUs taking contended mutexes (block, wake by the
 * holder, resume), condvar waits, short and long syscalls, yields, migrations, with STACKS
 * distinct stacks.  Prints the number of facts written on stdout. */
#include <stdio.h>
#include <stdlib.h>

#include "capture_builder.h"

#define T0 1000000ull

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gen_capture OUT SIZE_MB [THREADS] [CPUS] [STACKS]\n");
		return 2;
	}
	uint64_t size = strtoull(argv[2], NULL, 10) << 20;
	uint32_t n_threads = argc > 3 ? (uint32_t)atoi(argv[3]) : 64;
	uint32_t n_cpus = argc > 4 ? (uint32_t)atoi(argv[4]) : 8;
	uint32_t n_stacks = argc > 5 ? (uint32_t)atoi(argv[5]) : 1000;
	if (n_threads < 2 || n_cpus < 1 || n_stacks < 1) {
		fprintf(stderr, "gen_capture: bad arguments\n");
		return 2;
	}
	struct gt_cb *cb = gt_cb_new(n_cpus, 1 << 20, T0);
	if (!cb)
		return 1;
	uint64_t t = T0 + 10, facts = 0, x = 88172645463325252ull;
	gt_cb_thread_existing(cb, 0, t, 1, 0, 0);
	facts++;
	for (uint32_t s = 1; s <= n_stacks; s++) {
		uint64_t pcs[12];
		for (int i = 0; i < 12; i++)
			pcs[i] = 0x401000 + 0x40 * s + 0x1000 * (uint64_t)i;
		gt_cb_stack(cb, s % n_cpus, t, s, pcs, 4 + s % 8);
		facts++;
	}
	for (uint32_t k = 2; k <= n_threads; k++) {
		gt_cb_thread_new(cb, 0, t += 50, 1, k, 1, 0x401000 + 0x100 * (k % 7));
		gt_cb_thread_start(cb, k % n_cpus, t += 50, k, 1000 + k, 0x401000 + 0x100 * (k % 7));
		facts += 2;
	}
	size_t cur;
	uint64_t step = 0;
	while (gt_cb_image(cb, &cur), cur < size) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t a = 1 + (uint32_t)(x % n_threads), b = 1 + (uint32_t)((x >> 20) % n_threads);
		if (a == b)
			b = a % n_threads + 1;
		uint32_t ca = (uint32_t)((x >> 8) % n_cpus), cbu = (uint32_t)((x >> 16) % n_cpus);
		uint32_t stack = 1 + (uint32_t)((x >> 32) % n_stacks);
		uint64_t obj = 0x7f0000000000ull + 64 * ((x >> 40) % 256);
		switch (step++ % 4) {
		case 0: /* contended mutex: a blocks, b releases, a resumes */
			gt_cb_block_begin(cb, ca, t += 200, a, GT_BK_MUTEX, obj, stack);
			gt_cb_wake(cb, cbu, t += 300, b, GT_BK_MUTEX, obj, 1, stack);
			gt_cb_block_end(cb, ca, t += 100, a, GT_BK_MUTEX, obj, GT_BR_OK);
			facts += 3;
			break;
		case 1: /* a short syscall and a long one */
			gt_cb_syscall_begin(cb, ca, t += 100, a, GT_FD_FILE, 0, 3, stack);
			gt_cb_syscall_end(cb, ca, t += 2000, a, 0, 10);
			gt_cb_syscall_begin(cb, ca, t += 100, a, GT_FD_SOCKET, 45, 4, stack);
			gt_cb_syscall_end(cb, cbu, t += 40000, a, 45, 10);
			facts += 4;
			break;
		case 2: /* condvar wait woken by a signal */
			gt_cb_block_begin(cb, ca, t += 100, a, GT_BK_COND, obj, stack);
			gt_cb_wake(cb, cbu, t += 500, b, GT_BK_COND, obj, 1, stack);
			gt_cb_block_end(cb, cbu, t += 200, a, GT_BK_COND, obj, GT_BR_OK);
			facts += 3;
			break;
		default: /* a yield and a sleep */
			gt_cb_yield(cb, ca, t += 100, a, stack);
			gt_cb_block_begin(cb, cbu, t += 100, b, GT_BK_SLEEP, 1000, stack);
			gt_cb_block_end(cb, cbu, t += 1500, b, GT_BK_SLEEP, 1000, GT_BR_OK);
			facts += 3;
			break;
		}
	}
	gt_cb_capture_end(cb, 0, t + 10);
	facts++;
	if (gt_cb_write(cb, argv[1])) {
		perror(argv[1]);
		return 1;
	}
	gt_cb_free(cb);
	printf("%llu\n", (unsigned long long)facts);
	return 0;
}
