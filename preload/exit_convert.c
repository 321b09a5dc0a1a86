/* GOTRACE_OUT without `gotrace run`: the capture is converted at exit by the gotrace command,
 * run as a separate process (libgotrace.so never links the encoder) and waited for. */
#include "exit_convert.h"
#include "child_env.h"
#include "config.h"
#include "hooks.def"
#include "modules.h"

#include <string.h>

/* GOTRACE_OUT with %p replaced by the pid; a traced child's output without %p gets ".<pid>" */
static void build_out_path(char *out, size_t cap)
{
	char num[24];
	size_t n = 0;
	int had_pid = 0;
	uint64_t pid = (uint64_t)gt_sys0(SYS_getpid);
	num[gt_fmt_u64(num, pid)] = 0;
	for (const char *p = gt_cfg.out; *p && n + 24 < cap; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n = gt_append(out, n, cap, num);
			had_pid = 1;
			p++;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = 0;
	if (!had_pid && !gt_cfg.is_root) {
		n = gt_append(out, n, cap, ".");
		gt_append(out, n, cap, num);
	}
}

void gt_exit_convert(const char *capture)
{
	char out[GT_PATH_MAX], bin[GT_PATH_MAX];
	build_out_path(out, sizeof out);
	/* build tree: <build>/preload/libgotrace.so -> <build>/cli/gotrace (GT_GOTRACE_BUILD_RELPATH
	 * and GT_INSTALLED_GOTRACE come from preload/meson.build) */
	size_t n = strlen(gt_self_path);
	while (n && gt_self_path[n - 1] != '/')
		n--;
	bin[0] = 0;
	if (n && n + sizeof GT_GOTRACE_BUILD_RELPATH < sizeof bin) {
		memcpy(bin, gt_self_path, n);
		strcpy(bin + n, GT_GOTRACE_BUILD_RELPATH);
		if (access(bin, X_OK) != 0)
			bin[0] = 0;
	}
	if (!bin[0])
		strcpy(bin, GT_INSTALLED_GOTRACE);
	char *argv[] = {bin, (char *)"convert", (char *)"-q", (char *)capture, (char *)"-o", out, NULL};
	char *envbuf[512];
	char scratch[8192];
	extern char **environ;
	char **env = gt_child_env(environ, 0, envbuf, 512, scratch, sizeof scratch);
	pid_t pid;
	int rc = GT_REAL(posix_spawn)(&pid, bin, NULL, NULL, argv, env);
	if (rc) {
		gt_warn_err("cannot run the converter ", bin, rc, "; the capture is kept");
		return;
	}
	int status = 0;
	long w;
	do
		w = gt_sys4(SYS_wait4, pid, &status, 0, NULL);
	while (w == -EINTR);
	if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		gt_warn("converting ", capture, " failed; the capture is kept");
}
