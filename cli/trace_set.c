/* trace_set: see trace_set.h. */
#include "trace_set.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "encoder/encoder.h"

bool gt_is_capture_name(const char *name)
{
	size_t len = strlen(name);
	return strncmp(name, "gotrace-", 8) == 0 && len > 14 &&
	       strcmp(name + len - 6, ".gtcap") == 0;
}

/* uid-<n>: the captures of the programs a traced process ran after it became user n
 * (preload/capture_file.c), in a directory of theirs */
bool gt_is_user_dir(const char *dir, const char *name)
{
	struct stat st;
	char path[PATH_MAX];
	if (strncmp(name, "uid-", 4) != 0 || !name[4] || strspn(name + 4, "0123456789") != strlen(name + 4))
		return false;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* fn(name) for every capture in dir ("gotrace-...") and in its user directories
 * ("uid-<n>/gotrace-...", regular files only: those directories are the user's) */
void gt_each_capture(const char *dir, void (*fn)(const char *name, void *ctx), void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (gt_is_capture_name(e->d_name)) {
			fn(e->d_name, ctx);
			continue;
		}
		if (!gt_is_user_dir(dir, e->d_name))
			continue;
		char sub[PATH_MAX], rel[2 * NAME_MAX + 2];
		snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
		DIR *u = opendir(sub);
		struct dirent *f;
		struct stat st;
		while (u != NULL && (f = readdir(u)) != NULL) {
			if (!gt_is_capture_name(f->d_name) ||
			    fstatat(dirfd(u), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
				continue;
			snprintf(rel, sizeof rel, "%s/%s", e->d_name, f->d_name);
			fn(rel, ctx);
		}
		if (u != NULL)
			closedir(u);
	}
	if (d != NULL)
		closedir(d);
}

void gt_trace_images_identify(struct gt_trace_image *img, size_t n,
			      const char *const *captures, const uint32_t *fallback_pid)
{
	for (size_t i = 0; i < n; i++) {
		img[i] = (struct gt_trace_image){
			.capture = captures[i],
			.pid = fallback_pid != NULL ? fallback_pid[i] : 0,
		};
		struct gt_capture *c = gt_capture_open(captures[i], NULL, 0);
		if (c == NULL)
			continue;
		const struct gt_file_header *h = gt_capture_header(c);
		char exe[sizeof h->exe_path];
		memcpy(exe, h->exe_path, sizeof exe);
		exe[sizeof exe - 1] = '\0';
		const char *slash = strrchr(exe, '/');
		snprintf(img[i].command, sizeof img[i].command, "%.63s",
			 slash != NULL ? slash + 1 : exe);
		img[i].readable = true;
		img[i].pid = h->pid;
		img[i].start_ns = h->start_mono_ns;
		img[i].finalized = (h->flags & GT_FILE_FINALIZED) != 0;
		img[i].detached = (h->flags & GT_FILE_DETACHED) != 0;
		gt_capture_close(c);
	}
	for (size_t i = 0; i < n; i++) {
		img[i].last = true;
		for (size_t k = 0; k < n; k++) {
			if (k == i || img[k].pid != img[i].pid)
				continue;
			bool earlier = img[k].start_ns < img[i].start_ns ||
				       (img[k].start_ns == img[i].start_ns && k < i);
			if (earlier)
				img[i].generation++;
			else
				img[i].last = false;
		}
	}
}

void gt_trace_image_name(const char *out, const struct gt_trace_image *img, uint32_t main_pid,
			 const char *suffix, char *name, size_t size)
{
	if (!img->last)
		snprintf(name, size, "%s.%u-%u%s", out, img->pid, img->generation, suffix);
	else if (img->pid == main_pid)
		snprintf(name, size, "%s%s", out, suffix);
	else
		snprintf(name, size, "%s.%u%s", out, img->pid, suffix);
}

bool gt_trace_other_captures(const char *out, glob_t *g)
{
	char pattern[PATH_MAX + 16];
	snprintf(pattern, sizeof pattern, "%s.[0-9]*.gtcap", out);
	return glob(pattern, 0, NULL, g) == 0;
}
