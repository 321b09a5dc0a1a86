/* bench/stub.c: the descriptor whose reads it answers without a system call. */
#ifndef GT_BENCH_STUB_H
#define GT_BENCH_STUB_H

#define GT_BENCH_STUB_FD 1000

#endif
