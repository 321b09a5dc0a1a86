/* program_check: finding the command as execvp would, and refusing what LD_PRELOAD cannot
 * reach (static, set-id or file-capability, 32-bit or foreign programs, and #! scripts whose
 * interpreter is one of those), before anything runs. */
#ifndef GOTRACE_PROGRAM_CHECK_H
#define GOTRACE_PROGRAM_CHECK_H

#include <stddef.h>

#define EXIT_GOTRACE_FAILED 125 /* like env(1) and timeout(1): the wrapper failed */
#define EXIT_CANNOT_EXECUTE 126
#define EXIT_NOT_FOUND 127

/* execvp's search: NAME with a slash is a path, else the first executable regular file of
 * that name in $PATH.  Returns 0, or the errno of the best failure (EACCES beats ENOENT). */
int gt_resolve_command(const char *name, char *path, size_t size);

/* Checks PATH (shown to the user as SHOWN) and, for a #! script, its interpreter; says why
 * in one line ("gotrace run: ...").  Returns 0, or EXIT_NOT_FOUND / EXIT_CANNOT_EXECUTE. */
int gt_check_program(const char *shown, const char *path);

#endif
