/* The environment of a child (exec, posix_spawn, the converter at exit): libgotrace.so kept
 * in LD_PRELOAD, or put back with the GOTRACE_* settings when the program passes an
 * environment without it, or stripped (GOTRACE_FOLLOW=0). */
#include "child_env.h"
#include "clock.h"
#include "config.h"
#include "lifecycle.h"
#include "modules.h"
#include "stacks.h"

#include <stdlib.h>
#include <string.h>

extern char **environ;

#define GT_SELF_NAME "libgotrace.so"

/* LD_PRELOAD's value without our entries (separated by ':' or ' '). */
static size_t strip_self(const char *value, char *out, size_t cap)
{
	size_t n = 0;
	const char *p = value;
	while (*p) {
		while (*p == ':' || *p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ':' && *e != ' ')
			e++;
		size_t len = (size_t)(e - p);
		int self = 0;
		for (const char *q = p; q + sizeof GT_SELF_NAME - 1 <= e; q++)
			if (!memcmp(q, GT_SELF_NAME, sizeof GT_SELF_NAME - 1))
				self = 1;
		if (len && !self && n + len + 2 < cap) {
			if (n)
				out[n++] = ':';
			memcpy(out + n, p, len);
			n += len;
		}
		p = e;
	}
	out[n] = 0;
	return n;
}

static const char *const gt_env_names[] = {
	"GOTRACE_OUT", "GOTRACE_CAPTURE_DIR", "GOTRACE_STACKS", "GOTRACE_STACK_DEPTH",
	"GOTRACE_START_DELAY", "GOTRACE_DURATION", "GOTRACE_FOLLOW", "GOTRACE_CHUNK_SIZE",
	"GOTRACE_ROOT_PID", "GOTRACE_TSC_HZ", "GOTRACE_LAST", "GOTRACE_MAX_CAPTURE",
	"GOTRACE_STACK_CHECK", "GOTRACE_RUN", "GOTRACE_REAPER", "GOTRACE_LOCKS",
};

#define GT_N_NAMES (sizeof gt_env_names / sizeof gt_env_names[0])

/* What a child's environment gets from us and the program did not pass is named in
 * GOTRACE_HIDE ("LD_PRELOAD:GOTRACE_ROOT_PID:..."): the child's constructor takes it out of
 * environ again (gt_child_env_hide), keeping the settings' values here. */
#define GT_HIDE "GOTRACE_HIDE"
static char gt_hidden_store[GT_ENV_SCRATCH];
static const char *gt_hidden[GT_N_NAMES];

/* setting k as this process was given it */
static const char *our_setting(size_t k)
{
	const char *v = getenv(gt_env_names[k]);
	return v ? v : gt_hidden[k];
}

static const char *env_get(char *const envp[], const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; envp[i]; i++)
		if (!strncmp(envp[i], name, len) && envp[i][len] == '=')
			return envp[i] + len + 1;
	return NULL;
}

/* What a traced child gets from us rather than from the environment passed (theirs): the
 * root's pid when missing, and relative paths in the absolute form config.c resolved against
 * the directory the program started in.  NULL: theirs stays. */
static const char *our_value(const char *name, const char *theirs)
{
	if (!strcmp(name, "GOTRACE_ROOT_PID"))
		return theirs || !gt_cfg.root_pid[0] ? NULL : gt_cfg.root_pid;
	if (!strcmp(name, "GOTRACE_TSC_HZ"))
		return theirs || !gt_clock.tsc_hz_text[0] ? NULL : gt_clock.tsc_hz_text;
	if (!theirs || !*theirs || theirs[0] == '/')
		return NULL;
	if (!strcmp(name, "GOTRACE_OUT"))
		return gt_cfg.out;
	if (!strcmp(name, "GOTRACE_CAPTURE_DIR"))
		return gt_cfg.capture_dir[0] ? gt_cfg.capture_dir : NULL;
	return NULL;
}

/* entry is NAME=value of a setting our_value replaces */
static int replaced(const char *entry)
{
	for (size_t k = 0; k < sizeof gt_env_names / sizeof gt_env_names[0]; k++) {
		size_t nl = strlen(gt_env_names[k]);
		if (!strncmp(entry, gt_env_names[k], nl) && entry[nl] == '=')
			return our_value(gt_env_names[k], entry + nl + 1) != NULL;
	}
	return 0;
}

/* Whether the process's next image stays traced: not after gotrace detached it, and under
 * GOTRACE_FOLLOW=0 only in the first traced process (--no-follow traces the command across
 * exec; a child made without fork() shares its memory, hence the pid). */
int gt_follow_exec(void)
{
	if (gt_load(&gt_state) == GT_ST_DETACHED)
		return 0;
	if (gt_cfg.follow)
		return 1;
	char pid[24];
	pid[gt_fmt_u64(pid, (uint64_t)gt_sys0(SYS_getpid))] = 0;
	return !strcmp(pid, gt_cfg.root_pid);
}

/* Whether a spawned child (posix_spawn, system) is traced. */
int gt_follow_spawn(void)
{
	return gt_cfg.follow && gt_load(&gt_state) != GT_ST_DETACHED;
}

/* The program's envp can be read at slot i, the slots before it could (checked once per
 * page): a bad one is the kernel's to answer (EFAULT) */
static int slot_readable(char *const envp[], size_t i)
{
	return (i && (uintptr_t)&envp[i] % 4096) || gt_readable(&envp[i], sizeof *envp);
}

/* GOTRACE_HIDE=NAME:NAME:... for the settings in mask (bit GT_N_NAMES: LD_PRELOAD), into
 * out; NULL when it does not fit */
static char *hide_entry(uint32_t mask, char *out, size_t cap)
{
	GT_STATIC_ASSERT(GT_N_NAMES < 32, "a bit per setting");
	size_t n = gt_append(out, 0, cap, GT_HIDE "=");
	for (size_t k = 0; k <= GT_N_NAMES; k++)
		if (mask & 1u << k) {
			n = gt_append(out, n, cap, k < GT_N_NAMES ? gt_env_names[k] : "LD_PRELOAD");
			n = gt_append(out, n, cap, ":");
		}
	return n + 1 < cap ? out : NULL;
}

char **gt_child_env(char *const envp[], int follow, char **buf, size_t nbuf, char *scratch,
		    size_t nscratch)
{
	static char *const no_env[] = {NULL};
	if (!envp)
		envp = no_env; /* Linux runs the child with an empty environment */
	if (!gt_self_path[0])
		return (char **)envp;
	size_t n = 0;
	long preload = -1;
	for (;; n++) {
		if (!slot_readable(envp, n))
			return (char **)envp;
		if (!envp[n])
			break;
		if (!strncmp(envp[n], "LD_PRELOAD=", 11))
			preload = (long)n;
	}
	int has_self = preload >= 0 && strstr(envp[preload] + 11, GT_SELF_NAME);
	/* the root's pid and absolute paths reach children only this way: the program's environ
	 * is left alone */
	int fix = 0;
	for (size_t k = 0; follow && k < sizeof gt_env_names / sizeof gt_env_names[0]; k++)
		fix |= our_value(gt_env_names[k], env_get(envp, gt_env_names[k])) != NULL;
	if ((follow && has_self && !fix) || (!follow && !has_self))
		return (char **)envp;
	if (n + 3 + GT_N_NAMES > nbuf)
		return (char **)envp;
	uint32_t hide = 0; /* settings k added: bit k; LD_PRELOAD: bit GT_N_NAMES */
	size_t m = 0, used = 0;
	char *value = scratch;
	size_t cap = nscratch;
	if (follow && !has_self) {
		memcpy(value, "LD_PRELOAD=", 11);
		used = 11;
		size_t len = strlen(gt_self_path);
		if (used + len + 2 >= cap)
			return (char **)envp;
		memcpy(value + used, gt_self_path, len);
		used += len;
		if (preload >= 0 && envp[preload][11] && used + strlen(envp[preload] + 11) + 2 < cap) {
			value[used++] = ':';
			strcpy(value + used, envp[preload] + 11);
			used += strlen(envp[preload] + 11);
		}
		value[used++] = 0;
		hide |= 1u << GT_N_NAMES;
	}
	/* the program's entries in their order, LD_PRELOAD in its place when it had one */
	for (size_t i = 0; i < n; i++)
		if ((long)i == preload && follow && !has_self)
			buf[m++] = value;
		else if (((long)i != preload || (follow && has_self)) && !(follow && replaced(envp[i])))
			buf[m++] = envp[i];
	if (follow && !has_self && preload < 0)
		buf[m++] = value;
	if (follow) {
		/* our_value's settings, and all of ours in an environment built from scratch */
		for (size_t k = 0; k < sizeof gt_env_names / sizeof gt_env_names[0]; k++) {
			const char *theirs = env_get(envp, gt_env_names[k]);
			const char *v = our_value(gt_env_names[k], theirs);
			if (!v && !has_self && !theirs) {
				v = our_setting(k);
				v = v && our_value(gt_env_names[k], v) ? our_value(gt_env_names[k], v) : v;
			}
			size_t nl = strlen(gt_env_names[k]);
			if (!v || !*v || used + nl + strlen(v) + 2 >= cap)
				continue;
			char *entry = scratch + used;
			memcpy(entry, gt_env_names[k], nl);
			entry[nl] = '=';
			strcpy(entry + nl + 1, v);
			used += nl + strlen(v) + 2;
			buf[m++] = entry;
			if (!theirs)
				hide |= 1u << k;
		}
		if (hide && (buf[m] = hide_entry(hide, scratch + used, cap - used)))
			m++;
	} else {
		memcpy(value, "LD_PRELOAD=", 11);
		size_t len = strip_self(envp[preload] + 11, value + 11, cap - 11);
		if (len)
			buf[m++] = value;
	}
	buf[m] = NULL;
	return buf;
}

/* environ's entry NAME=..., taken out (the rest moved up) and its bytes cleared, so that
 * /proc/self/environ shows NULs there; its value copied into store first (NULL: not kept).
 * Returns the copy, or NULL. */
static const char *env_remove(const char *name, char *store, size_t cap, size_t *used)
{
	size_t len = strlen(name);
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, name, len) || (*e)[len] != '=')
			continue;
		char *entry = *e;
		const char *copy = NULL;
		size_t vlen = strlen(entry + len + 1);
		if (store && *used + vlen + 1 <= cap) {
			copy = memcpy(store + *used, entry + len + 1, vlen + 1);
			*used += vlen + 1;
		}
		do
			e[0] = e[1];
		while (*e++);
		memset(entry, 0, len + 1 + vlen);
		return copy;
	}
	return NULL;
}

void gt_child_env_hide(void)
{
	char list[512];
	const char *marked = getenv(GT_HIDE);
	if (!marked || strlen(marked) >= sizeof list)
		return;
	strcpy(list, marked);
	env_remove(GT_HIDE, NULL, 0, NULL);
	size_t used = 0;
	char *save = NULL;
	for (char *name = strtok_r(list, ":", &save); name; name = strtok_r(NULL, ":", &save)) {
		if (!strcmp(name, "LD_PRELOAD")) {
			/* ours alone, or ours in front of the program's: the program's stays */
			char *v = getenv("LD_PRELOAD"), rest[GT_ENV_SCRATCH];
			size_t n = v ? strip_self(v, rest, sizeof rest) : 0;
			if (!v)
				continue;
			if (!n) {
				env_remove("LD_PRELOAD", NULL, 0, NULL);
				continue;
			}
			size_t was = strlen(v);
			memcpy(v, rest, n + 1);
			memset(v + n, 0, was - n);
			continue;
		}
		for (size_t k = 0; k < GT_N_NAMES; k++)
			if (!strcmp(name, gt_env_names[k]))
				gt_hidden[k] = env_remove(name, gt_hidden_store, sizeof gt_hidden_store, &used);
	}
}
