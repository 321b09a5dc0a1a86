/* What both fuzz targets share: each input is handed to the code under test as a file (the
 * readers take paths), a memfd reached through /proc/self/fd, rewritten for every input. */
#ifndef GT_FUZZ_INPUT_H
#define GT_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* The path of a file holding exactly data; aborts when it cannot be made. */
const char *fuzz_input_file(const uint8_t *data, size_t size);

#endif
