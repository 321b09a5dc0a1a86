/* gendata FILE MIB: MIB mebibytes of mixed input for the compressors of scripts/bench, the
 * same bytes on every run: runs of text (words of a small vocabulary, lines and paragraphs)
 * alternating with runs of pseudo-random bytes (xorshift64*, fixed seed). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state = 0x9E3779B97F4A7C15ull;

static uint64_t next_random(void)
{
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 0x2545F4914F6CDD1Dull;
}

static const char *const words[] = {
	"thread", "mutex", "condition", "variable", "trace", "capture", "fact", "encoder",
	"goroutine", "scheduler", "processor", "the", "a", "of", "and", "to", "in", "is",
	"blocked", "unblocked", "syscall", "stack", "frame", "symbol", "inline", "wake",
	"lock", "unlock", "signal", "broadcast", "barrier", "semaphore", "pipe", "socket",
};

int main(int argc, char **argv)
{
	if (argc != 3 || atol(argv[2]) < 1) {
		fprintf(stderr, "usage: gendata FILE MIB\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "wb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	uint64_t total = (uint64_t)atol(argv[2]) << 20, written = 0;
	static char buf[1 << 16];
	const size_t nwords = sizeof words / sizeof words[0];
	while (written < total) {
		/* 3 parts text to 1 part random, in runs of 64 KiB */
		size_t n = 0;
		if (next_random() % 4) {
			int col = 0;
			while (n < sizeof buf - 32) {
				const char *w = words[next_random() % nwords];
				size_t len = strlen(w);
				memcpy(buf + n, w, len);
				n += len;
				col += (int)len + 1;
				buf[n++] = col > 72 ? (col = 0, '\n') : ' ';
			}
		} else {
			for (; n + 8 <= sizeof buf; n += 8) {
				uint64_t r = next_random();
				memcpy(buf + n, &r, 8);
			}
		}
		if (n > total - written)
			n = (size_t)(total - written);
		if (fwrite(buf, 1, n, f) != n) {
			perror(argv[1]);
			return 1;
		}
		written += n;
	}
	if (fclose(f)) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
