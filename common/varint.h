/* Unsigned LEB128 varints, as both Go trace formats and their reader in report/ use them:
 * 7 bits a byte, low bits first, the high bit set on every byte but the last. */
#ifndef GOTRACE_COMMON_VARINT_H
#define GOTRACE_COMMON_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Inline: the writers put several per event. */
static inline size_t gt_uvarint_put(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

static inline size_t gt_uvarint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Decodes one varint from [p, end); returns bytes read, 0 when truncated or > 10 bytes. */
size_t gt_uvarint_get(const uint8_t *p, const uint8_t *end, uint64_t *v);

#endif
