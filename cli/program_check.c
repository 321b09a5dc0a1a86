/* program_check: see program_check.h. */
#include "program_check.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli_common.h"

#define MAX_SCRIPT_DEPTH 4

#define fail(...) gt_cli_fail("run", __VA_ARGS__)

int gt_resolve_command(const char *name, char *path, size_t size)
{
	if (strchr(name, '/') != NULL) {
		if ((size_t)snprintf(path, size, "%s", name) >= size)
			return ENAMETOOLONG;
		return 0;
	}
	const char *search = getenv("PATH");
	char default_path[256];
	if (search == NULL) {
		confstr(_CS_PATH, default_path, sizeof default_path);
		search = default_path;
	}
	int best = ENOENT;
	for (const char *dir = search;; ) {
		const char *end = strchrnul(dir, ':');
		int len = (int)(end - dir);
		if ((size_t)snprintf(path, size, "%.*s%s%s", len, dir, len ? "/" : "", name) < size) {
			struct stat st;
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				if (access(path, X_OK) == 0)
					return 0;
				best = EACCES;
			}
		}
		if (*end == '\0')
			break;
		dir = end + 1;
	}
	return best;
}

static bool is_dynamic_loader(Elf *elf, GElf_Phdr *dynamic_phdr)
{
	/* The loader itself (`ld-linux-x86-64.so.2 ./prog`) has no PT_INTERP but honours
	 * LD_PRELOAD; it is the one shared object that names itself ld-linux / ld64. */
	Elf_Scn *scn = NULL;
	(void)dynamic_phdr;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr shdr;
		if (gelf_getshdr(scn, &shdr) == NULL || shdr.sh_type != SHT_DYNAMIC)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
		for (size_t i = 0; data != NULL && i < n; i++) {
			GElf_Dyn dyn;
			if (gelf_getdyn(data, (int)i, &dyn) == NULL || dyn.d_tag != DT_SONAME)
				continue;
			const char *soname = elf_strptr(elf, shdr.sh_link, dyn.d_un.d_val);
			if (soname != NULL &&
			    (strncmp(soname, "ld-linux", 8) == 0 || strncmp(soname, "ld64", 4) == 0))
				return true;
		}
	}
	return false;
}

#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#else
#define NATIVE_MACHINE EM_NONE
#endif

/* Whether the loader will honour LD_PRELOAD when PATH (an ELF file open as FD) runs. */
static int check_elf(const char *shown, int fd)
{
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	int ret = -1;
	GElf_Ehdr ehdr;
	size_t n_phdrs;

	if (elf == NULL || elf_kind(elf) != ELF_K_ELF || gelf_getehdr(elf, &ehdr) == NULL ||
	    elf_getphdrnum(elf, &n_phdrs) != 0) {
		fail("%s: not a valid ELF program (%s)", shown, elf_errmsg(-1));
		goto out;
	}
	if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_machine != NATIVE_MACHINE) {
		fail("%s is a %s program: libgotrace.so only loads into 64-bit %s programs",
		     shown, ehdr.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "foreign-architecture",
		     NATIVE_MACHINE == EM_AARCH64 ? "aarch64" : "x86-64");
		goto out;
	}
	bool has_interp = false, has_dynamic = false;
	GElf_Phdr dynamic_phdr = { 0 };
	for (size_t i = 0; i < n_phdrs; i++) {
		GElf_Phdr phdr;
		if (gelf_getphdr(elf, (int)i, &phdr) == NULL)
			continue;
		if (phdr.p_type == PT_INTERP)
			has_interp = true;
		if (phdr.p_type == PT_DYNAMIC) {
			has_dynamic = true;
			dynamic_phdr = phdr;
		}
	}
	if (!has_interp && !(has_dynamic && is_dynamic_loader(elf, &dynamic_phdr))) {
		fail("%s is statically linked: LD_PRELOAD cannot work, so gotrace cannot trace it"
		     " (link it dynamically)", shown);
		goto out;
	}
	ret = 0;
out:
	if (elf != NULL)
		elf_end(elf);
	return ret;
}

/* The kernel runs a set-id program (or one with file capabilities) in secure mode, where
 * the loader ignores LD_PRELOAD: the run would succeed and trace nothing. */
static int check_secure_exec(const char *shown, const char *path, const struct stat *st)
{
	struct statvfs vfs;
	if (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
		return 0; /* set-id bits are ignored on this mount */
	if ((st->st_mode & S_ISUID) && st->st_uid != getuid()) {
		fail("%s is setuid: the loader ignores LD_PRELOAD for it, so gotrace cannot "
		     "trace it (run a copy without the setuid bit)", shown);
		return -1;
	}
	if ((st->st_mode & S_ISGID) && st->st_gid != getgid()) {
		fail("%s is setgid: the loader ignores LD_PRELOAD for it, so gotrace cannot "
		     "trace it (run a copy without the setgid bit)", shown);
		return -1;
	}
	if (getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0) {
		fail("%s has file capabilities: the loader ignores LD_PRELOAD for it, so gotrace "
		     "cannot trace it", shown);
		return -1;
	}
	return 0;
}

static int check_program(const char *shown, const char *path, int depth)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fail("%s: %s", shown, strerror(errno));
		return errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE;
	}
	if (!S_ISREG(st.st_mode)) {
		fail("%s: not a regular file", shown);
		return EXIT_CANNOT_EXECUTE;
	}
	if (access(path, X_OK) != 0) {
		fail("%s: not executable (%s)", shown, strerror(errno));
		return EXIT_CANNOT_EXECUTE;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* Executable but unreadable (mode 0711): the kernel can run it, we cannot look
		 * inside; let the run tell. */
		return 0;
	}
	char head[256];
	ssize_t n = pread(fd, head, sizeof head - 1, 0);
	int ret = 0;
	if (n >= 2 && head[0] == '#' && head[1] == '!') {
		/* A script: what runs is its interpreter (set-id bits of scripts are ignored). */
		head[n] = '\0';
		char *interp = head + 2 + strspn(head + 2, " \t");
		interp[strcspn(interp, " \t\n")] = '\0';
		if (depth >= MAX_SCRIPT_DEPTH || interp[0] == '\0') {
			fail("%s: unusable #! line", shown);
			ret = EXIT_CANNOT_EXECUTE;
		} else if (check_program(interp, interp, depth + 1) != 0) {
			ret = EXIT_CANNOT_EXECUTE;
		}
	} else if (n >= 4 && memcmp(head, ELFMAG, SELFMAG) == 0) {
		if (check_elf(shown, fd) != 0 || check_secure_exec(shown, path, &st) != 0)
			ret = EXIT_CANNOT_EXECUTE;
	} else {
		fail("%s: not an ELF program or #! script", shown);
		ret = EXIT_CANNOT_EXECUTE;
	}
	close(fd);
	return ret;
}

int gt_check_program(const char *shown, const char *path)
{
	return check_program(shown, path, 0);
}
