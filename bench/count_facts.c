/* count_facts CAPTURE: what a capture holds, through the encoder's reader.
 *
 * Prints one line per record type present, "<type> <records> <bytes>", and last
 * "total <records> <bytes> <file bytes>": the records' own bytes (headers and payloads)
 * against the size of the file (its header and the unused tails of its chunks). */
#include <ctype.h>
#include <stdio.h>
#include <sys/stat.h>

#include "encoder/capture_reader.h"

/* scripts/bench reads the names in lower case ("thread_new"); type 0 never comes out of the
 * reader but keeps its old name. */
static void print_fact_name(unsigned type)
{
	for (const char *c = type ? gt_fact_name(type) : "none"; *c; c++)
		putchar(tolower((unsigned char)*c));
}

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
		uint32_t len = gt_capture_file_bytes(c); /* a compact record's, not its full form's */
		unsigned t = r.rec->type < GT_FACT_COUNT ? r.rec->type : GT_NONE;
		n[t]++;
		bytes[t] += len;
		total++;
		total_bytes += len;
	}
	gt_capture_close(c);
	struct stat st;
	if (stat(argv[1], &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	for (unsigned t = 0; t < GT_FACT_COUNT; t++) {
		if (!n[t])
			continue;
		print_fact_name(t);
		printf(" %llu %llu\n", n[t], bytes[t]);
	}
	printf("total %llu %llu %lld\n", total, total_bytes, (long long)st.st_size);
	return 0;
}
