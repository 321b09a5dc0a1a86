/* process_name: the name a process is known by, from its GT_PROCESS_NAME facts (capture.h),
 * for the model, the conversion summary and the reports alike. */
#ifndef GOTRACE_PROCESS_NAME_H
#define GOTRACE_PROCESS_NAME_H

#include <stddef.h>

#include "gotrace/capture.h"

struct gt_process_name {
	char name[64];                    /* the program as started or as it renamed itself */
	char comm[16];                    /* the kernel's name of its main thread */
	char cmdline[GT_CMDLINE_MAX + 1]; /* its arguments joined by spaces */
};

/* Before any GT_PROCESS_NAME (or in a capture without one): the executable's base name and
 * the header's command line, as at the start. */
void gt_process_name_from_header(struct gt_process_name *out, const struct gt_file_header *h);

/* From a GT_PROCESS_NAME payload of payload_len bytes.  The name is the first argument
 * without the directory of its first word ("/usr/bin/redis-server" -> "redis-server",
 * "nginx: worker process" as it is), else comm. */
void gt_process_name_from_fact(struct gt_process_name *out, const struct gt_p_process_name *p,
			       size_t payload_len);

#endif
