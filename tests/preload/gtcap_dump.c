/* gtcap-dump CAPTURE: print every committed record (a debugging aid for the tests). */
#include <stdio.h>

#include "capture_reader.h"

int main(int argc, char **argv)
{
	struct capture c;
	if (argc != 2) {
		fprintf(stderr, "usage: gtcap-dump CAPTURE\n");
		return 2;
	}
	if (capture_open(&c, argv[1]))
		return 1;
	capture_dump(&c, stdout);
	printf("records %zu bad_bytes %zu\n", c.n, c.bad_bytes);
	capture_close(&c);
	return 0;
}
