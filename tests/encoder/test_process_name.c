/* process_name.c: the name a process is known by, from GT_PROCESS_NAME payloads as the
 * kernel's /proc/self/cmdline gives them (arguments NUL-separated). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "encoder/encoder.h"

struct name_case {
	const char *comm;
	const char *args;       /* NUL-separated, args_len bytes */
	size_t args_len;
	const char *name, *cmdline;
};

#define ARGS(s) s, sizeof s - 1

static const struct name_case cases[] = {
	{"redis-server", ARGS("/usr/bin/redis-server\0*:6379\0"), "redis-server",
	 "/usr/bin/redis-server *:6379"},
	/* rewritten over its arguments: one argument, spaces, the rest zeroed */
	{"redis-server", ARGS("/usr/bin/redis-server *:6379\0\0\0\0\0"), "redis-server *:6379",
	 "/usr/bin/redis-server *:6379"},
	{"nginx", ARGS("nginx: worker process\0\0\0\0\0\0"), "nginx: worker process",
	 "nginx: worker process"},
	{"nginx", ARGS("nginx: master process /usr/sbin/nginx -g daemon off;\0"),
	 "nginx: master process /usr/sbin/nginx -g daemon off;",
	 "nginx: master process /usr/sbin/nginx -g daemon off;"},
	/* a path with a space, and arguments after it: the path's last part */
	{"prog", ARGS("/opt/My App/bin/prog\0-x\0"), "prog", "/opt/My App/bin/prog -x"},
	{"my-alias", ARGS("./my-alias\0threads\0"), "my-alias", "./my-alias threads"},
	{"exe", ARGS("custom-name\0hello\0"), "custom-name", "custom-name hello"},
	/* an empty argv[0]: comm */
	{"prog", ARGS("\0arg\0"), "prog", " arg"},
};

ParameterizedTestParameters(process_name, from_fact)
{
	static size_t rows[sizeof cases / sizeof *cases];
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
		rows[i] = i;
	return cr_make_param_array(size_t, rows, sizeof rows / sizeof *rows);
}

ParameterizedTest(size_t *row, process_name, from_fact)
{
	const struct name_case *c = &cases[*row];
	uint8_t buf[sizeof(struct gt_p_process_name) + GT_CMDLINE_MAX];
	struct gt_p_process_name p = {.cmdline_len = (uint16_t)c->args_len};
	strncpy(p.comm, c->comm, sizeof p.comm - 1);
	memcpy(buf, &p, sizeof p);
	memcpy(buf + sizeof p, c->args, c->args_len);
	struct gt_process_name out;
	memset(&out, 0, sizeof out);
	gt_process_name_from_fact(&out, (const void *)buf, sizeof p + c->args_len);
	cr_expect_str_eq(out.name, c->name, "case %zu", *row);
	cr_expect_str_eq(out.cmdline, c->cmdline, "case %zu", *row);
	cr_expect_str_eq(out.comm, c->comm, "case %zu", *row);
}

/* Before any fact: the executable's base name; a fact whose command line could not be read
 * keeps the command line known and takes comm as the name. */
Test(process_name, header_then_fact_without_command_line)
{
	struct gt_file_header h;
	memset(&h, 0, sizeof h);
	strcpy(h.exe_path, "/usr/bin/redis-check-rdb");
	strcpy(h.cmdline, "redis-server *:6379");
	struct gt_process_name out;
	gt_process_name_from_header(&out, &h);
	cr_expect_str_eq(out.name, "redis-check-rdb");
	cr_expect_str_eq(out.cmdline, "redis-server *:6379");
	struct gt_p_process_name p = {.cmdline_len = 0};
	strcpy(p.comm, "redis-server");
	gt_process_name_from_fact(&out, &p, sizeof p);
	cr_expect_str_eq(out.name, "redis-server");
	cr_expect_str_eq(out.comm, "redis-server");
	cr_expect_str_eq(out.cmdline, "redis-server *:6379");
	/* a cmdline_len past the payload is cut to it */
	p.cmdline_len = 100;
	gt_process_name_from_fact(&out, &p, sizeof p);
	cr_expect_str_eq(out.name, "redis-server");
}
