/* The flight recorder's window (gotrace run --last, GOTRACE_LAST): one parser for the command
 * and for libgotrace.so, which may run before main (no locale, no strtod, no malloc).
 *
 *   DURATION  a number of seconds with a unit: "30s", "1.5s", "500ms"
 *   SIZE      bytes of CPU chunks, with an optional K, M or G (powers of 1024, "KiB" and
 *             "MB" read the same): "64M", "1G", "1048576"
 */
#ifndef GOTRACE_LAST_H
#define GOTRACE_LAST_H

#include <stdint.h>

/* 1 with exactly one of *bytes and *ns set (the other 0), 0 when malformed or zero. */
static inline int gt_parse_last(const char *s, uint64_t *bytes, uint64_t *ns)
{
	uint64_t whole = 0, frac = 0, scale = 1000000000ull;
	int digits = 0;
	const char *p = s;
	*bytes = *ns = 0;
	while (*p >= '0' && *p <= '9') {
		whole = whole * 10 + (uint64_t)(*p++ - '0');
		if (whole > (1ull << 40))
			return 0;
		digits++;
	}
	int dot = *p == '.';
	if (dot) {
		for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
		}
	}
	if (!digits)
		return 0;
	if (p[0] == 's' && !p[1])
		*ns = whole * 1000000000ull + frac;
	else if (p[0] == 'm' && p[1] == 's' && !p[2])
		*ns = whole * 1000000ull + frac / 1000;
	if (*ns)
		return whole < 100000000ull;
	if (dot || (*p && p[0] != 'K' && p[0] != 'M' && p[0] != 'G' && p[0] != 'k'))
		return 0;
	unsigned shift = !*p ? 0 : (p[0] == 'G' ? 30 : p[0] == 'M' ? 20 : 10);
	if (*p) {
		p++;
		if (p[0] == 'i' && p[1] == 'B')
			p += 2;
		else if (p[0] == 'B')
			p++;
	}
	if (*p || whole > (1ull << (50 - shift)))
		return 0;
	*bytes = whole << shift;
	return *bytes != 0;
}

#endif
