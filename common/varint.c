/* varint: see varint.h. */
#include "varint.h"

size_t gt_uvarint_get(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	for (size_t i = 0; i < 10 && p + i < end; i++) {
		x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}
