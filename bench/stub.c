/* libgtbenchstub.so: sched_yield and reads of GT_BENCH_STUB_FD that return at once.
 *
 * Preloaded after libgotrace.so, it is what the tracer's hooks call as "the real function",
 * so a traced call costs the hook and its fact and nothing of the kernel: the microbenchmark
 * compares LD_PRELOAD="libgotrace.so libgtbenchstub.so" with libgtbenchstub.so alone and
 * the difference is the tracer's own cost, free of system call noise. */
#include <dlfcn.h>
#include <stddef.h>
#include <sys/types.h>

#include "stub.h"

#define STUB_EXPORT __attribute__((visibility("default")))

static ssize_t (*next_read)(int, void *, size_t);

STUB_EXPORT int sched_yield(void) { return 0; }

STUB_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	if (fd == GT_BENCH_STUB_FD)
		return (ssize_t)n;
	if (!next_read)
		next_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	return next_read(fd, buf, n);
}
