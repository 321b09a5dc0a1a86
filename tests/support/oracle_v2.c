/* oracle_v2: see oracle_v2.h. */
#include "oracle_v2.h"

#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

bool gt_go_trace_tool(const char *version, char *path, size_t size)
{
	char var[32], go[PATH_MAX];
	size_t k = (size_t)snprintf(var, sizeof var, "GT_GO");
	for (const char *v = version; *v && k + 1 < sizeof var; v++)
		if (*v != '.')
			var[k++] = *v;
	var[k] = 0;
	const char *env = getenv(var);
	if (env && *env && strchr(env, '/'))
		snprintf(go, sizeof go, "%s", env);
	else
		snprintf(go, sizeof go, "/usr/lib/go-%s/bin/go", version);
	char real[PATH_MAX];
	if (!realpath(go, real))
		return false;
	/* GOROOT/bin/go -> GOROOT/pkg/tool/<os>_<arch>/trace */
	char pattern[PATH_MAX + 32];
	snprintf(pattern, sizeof pattern, "%s/../pkg/tool/*/trace", dirname(real));
	glob_t g;
	if (glob(pattern, 0, NULL, &g) != 0)
		return false;
	bool found = g.gl_pathc > 0;
	if (found)
		snprintf(path, size, "%s", g.gl_pathv[0]);
	globfree(&g);
	return found;
}

static char *slurp_fd(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return NULL;
	char *s = malloc((size_t)st.st_size + 1);
	if (!s)
		return NULL;
	ssize_t n = pread(fd, s, (size_t)st.st_size, 0);
	s[n > 0 ? n : 0] = 0;
	return s;
}

int gt_dump_v2(const char *trace, const char *version, char **dump, char **err)
{
	char tool[PATH_MAX];
	*dump = NULL;
	if (err)
		*err = NULL;
	if (!gt_go_trace_tool(version, tool, sizeof tool)) {
		fprintf(stderr, "gt_dump_v2: Go %s is not installed\n", version);
		return -1;
	}
	bool parsed = strcmp(version, "1.24") >= 0 && strlen(version) >= 4;
	const char *argv[] = {tool, parsed ? "-d=parsed" : "-d=1", trace, NULL};
	char out_path[] = "/tmp/gt-dump-v2-XXXXXX", err_path[] = "/tmp/gt-dump-v2e-XXXXXX";
	int out = mkstemp(out_path), errfd = err ? mkstemp(err_path) : -1;
	if (out < 0 || (err && errfd < 0))
		return -1;
	unlink(out_path);
	if (err)
		unlink(err_path);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	if (err)
		posix_spawn_file_actions_adddup2(&fa, errfd, 2);
	/* the tool alone, never a toolchain download */
	setenv("GOTOOLCHAIN", "local", 1);
	setenv("GOPROXY", "off", 1);
	pid_t pid;
	int st = -1;
	if (posix_spawn(&pid, tool, &fa, NULL, (char *const *)argv, environ) == 0 &&
	    waitpid(pid, &st, 0) == pid)
		st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	posix_spawn_file_actions_destroy(&fa);
	*dump = slurp_fd(out);
	close(out);
	if (err) {
		*err = slurp_fd(errfd);
		close(errfd);
	}
	return st;
}

size_t gt_dump_v2_events(const char *dump)
{
	size_t n = 0;
	for (const char *l = dump; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "")
		n += !strncmp(l, "M=", 2);
	return n;
}

static bool uvarint(FILE *f, uint64_t *v)
{
	uint64_t x = 0;
	for (int i = 0; i < 10; i++) {
		int c = fgetc(f);
		if (c == EOF)
			return false;
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

ssize_t gt_trace_v2_generations(const char *trace, uint64_t *offsets, size_t cap, uint64_t *end)
{
	FILE *f = fopen(trace, "rb");
	if (!f)
		return -1;
	char header[16];
	ssize_t n = -1;
	*end = 0;
	if (fread(header, 1, 16, f) == 16 && !memcmp(header, "go 1.22 trace\0\0\0", 16)) {
		n = 0;
		uint64_t last = 0;
		*end = 16;
		for (;;) {
			long at = ftell(f);
			uint64_t gen, m, base, size;
			if (fgetc(f) != 1 || !uvarint(f, &gen) || !uvarint(f, &m) || !uvarint(f, &base) ||
			    !uvarint(f, &size) || fseek(f, (long)size, SEEK_CUR) != 0)
				break;
			struct stat st;
			if (fstat(fileno(f), &st) != 0 || ftell(f) > st.st_size)
				break;
			if (gen < last) {
				n = -1;
				break;
			}
			if (gen > last) {
				if ((size_t)n < cap)
					offsets[n] = (uint64_t)at;
				n++;
				last = gen;
			}
			*end = (uint64_t)ftell(f);
		}
	}
	fclose(f);
	return n;
}

uint64_t gt_trace_v2_batch_end(const char *trace, uint64_t offset)
{
	FILE *f = fopen(trace, "rb");
	if (!f)
		return 0;
	uint64_t gen, m, base, size, end = 0;
	struct stat st;
	if (fseek(f, (long)offset, SEEK_SET) == 0 && fgetc(f) == 1 && uvarint(f, &gen) &&
	    uvarint(f, &m) && uvarint(f, &base) && uvarint(f, &size) && fstat(fileno(f), &st) == 0 &&
	    (uint64_t)ftell(f) + size <= (uint64_t)st.st_size)
		end = (uint64_t)ftell(f) + size;
	fclose(f);
	return end;
}
