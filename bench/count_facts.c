/* count_facts CAPTURE: what a capture holds, through the encoder's reader.
 *
 * Prints one line per record type present, "<type> <records> <bytes>", and last
 * "total <records> <bytes> <file bytes>": the records' own bytes (headers and payloads)
 * against the size of the file (its header and the unused tails of its chunks). */
#include <stdio.h>
#include <sys/stat.h>

#include "capture_reader.h"

static const char *const fact_names[GT_FACT_COUNT] = {
	[GT_NONE] = "none",
	[GT_THREAD_NEW] = "thread_new",
	[GT_THREAD_START] = "thread_start",
	[GT_THREAD_END] = "thread_end",
	[GT_THREAD_NAME] = "thread_name",
	[GT_THREAD_EXISTING] = "thread_existing",
	[GT_BLOCK_BEGIN] = "block_begin",
	[GT_BLOCK_END] = "block_end",
	[GT_WAKE] = "wake",
	[GT_SYSCALL_BEGIN] = "syscall_begin",
	[GT_SYSCALL_END] = "syscall_end",
	[GT_YIELD] = "yield",
	[GT_STACK] = "stack",
	[GT_MODULE] = "module",
	[GT_MODULE_UNLOAD] = "module_unload",
	[GT_CLOCK] = "clock",
	[GT_NOTICE] = "notice",
	[GT_USER] = "user",
	[GT_PROCESS] = "process",
	[GT_CAPTURE_END] = "capture_end",
};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: count_facts CAPTURE\n");
		return 2;
	}
	char err[512];
	struct gt_capture *c = gt_capture_open(argv[1], err, sizeof err);
	if (!c) {
		fprintf(stderr, "count_facts: %s\n", err);
		return 1;
	}
	unsigned long long n[GT_FACT_COUNT] = {0}, bytes[GT_FACT_COUNT] = {0}, total = 0, total_bytes = 0;
	struct gt_capture_record r;
	while (gt_capture_next(c, &r)) {
		unsigned t = r.rec->type < GT_FACT_COUNT ? r.rec->type : GT_NONE;
		n[t]++;
		bytes[t] += 8ull * r.rec->nwords;
		total++;
		total_bytes += 8ull * r.rec->nwords;
	}
	gt_capture_close(c);
	struct stat st;
	if (stat(argv[1], &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	for (unsigned t = 0; t < GT_FACT_COUNT; t++)
		if (n[t])
			printf("%s %llu %llu\n", fact_names[t], n[t], bytes[t]);
	printf("total %llu %llu %lld\n", total, total_bytes, (long long)st.st_size);
	return 0;
}
