/* process_name: see process_name.h. */
#include "encoder.h"

#include <stdio.h>
#include <string.h>

static const char *after_dir(const char *word, size_t word_len)
{
	const char *slash = memrchr(word, '/', word_len);
	return slash != NULL ? slash + 1 : word;
}

void gt_process_name_from_header(struct gt_process_name *out, const struct gt_file_header *h)
{
	char exe[sizeof h->exe_path];
	memcpy(exe, h->exe_path, sizeof exe);
	exe[sizeof exe - 1] = '\0';
	const char *base = after_dir(exe, strlen(exe));
	snprintf(out->name, sizeof out->name, "%.63s", base);
	snprintf(out->comm, sizeof out->comm, "%.15s", base);
	size_t len = strnlen(h->cmdline, sizeof h->cmdline);
	len = len < sizeof out->cmdline - 1 ? len : sizeof out->cmdline - 1;
	memcpy(out->cmdline, h->cmdline, len);
	out->cmdline[len] = '\0';
}

void gt_process_name_from_fact(struct gt_process_name *out, const struct gt_p_process_name *p,
			       size_t payload_len)
{
	size_t len = payload_len > sizeof *p ? payload_len - sizeof *p : 0;
	if (p->cmdline_len < len)
		len = p->cmdline_len;
	if (len > GT_CMDLINE_MAX)
		len = GT_CMDLINE_MAX;
	const char *args = (const char *)(p + 1);
	size_t comm_len = strnlen(p->comm, sizeof p->comm);
	char comm[sizeof out->comm];
	memcpy(comm, p->comm, comm_len < sizeof comm - 1 ? comm_len : sizeof comm - 1);
	comm[comm_len < sizeof comm - 1 ? comm_len : sizeof comm - 1] = '\0';

	/* arguments NUL-separated (a rewritten command line may be one argument with spaces) */
	char line[sizeof out->cmdline];
	memcpy(line, args, len);
	while (len > 0 && (line[len - 1] == '\0' || line[len - 1] == ' '))
		len--;
	line[len] = '\0';
	size_t argv0_len = strlen(line);
	for (size_t i = 0; i < len; i++)
		if (line[i] == '\0')
			line[i] = ' ';

	/* argv[0] is a path, unless it is the only argument and holds spaces: a title written
	 * over the arguments ("nginx: worker process", "/usr/bin/redis-server *:6379"), whose
	 * first word alone may be a path */
	size_t word = argv0_len < len ? argv0_len : strcspn(line, " ");
	const char *name = after_dir(line, word < argv0_len ? word : argv0_len);
	size_t name_len = argv0_len - (size_t)(name - line);
	if (name_len == 0) {
		name = comm;
		name_len = strlen(comm);
	}
	if (name_len > 0) {
		if (name_len > sizeof out->name - 1)
			name_len = sizeof out->name - 1;
		memcpy(out->name, name, name_len);
		out->name[name_len] = '\0';
	}
	if (comm[0])
		memcpy(out->comm, comm, sizeof comm);
	if (len > 0)
		memcpy(out->cmdline, line, len + 1);
}
