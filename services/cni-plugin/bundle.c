/* bundle.c — the plugin's own libraries and loader beside it (bundle.h). */
#include "services/cni-plugin/bundle.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <libgen.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/atomic_file.h"
#include "shared/errbuf.h"

#define MAX_OBJECT_BYTES (256u << 20)

struct copy_ctx {
	const char *dir;
	int verify, n, failed;
	char *err;
	size_t errlen;
};

/* 1 when dst already holds src's bytes (verify) or its size (not verify). */
static int same_file(const char *src, const char *dst, int verify)
{
	struct stat a, b;
	char why[256], *x = NULL, *y = NULL;
	long nx, ny;
	int same;

	if (stat(src, &a) != 0 || stat(dst, &b) != 0 || a.st_size != b.st_size)
		return 0;
	if (!verify)
		return 1;
	nx = km_read_file(src, MAX_OBJECT_BYTES, &x, why, sizeof(why));
	ny = km_read_file(dst, MAX_OBJECT_BYTES, &y, why, sizeof(why));
	same = nx >= 0 && nx == ny && !memcmp(x, y, (size_t)nx);
	free(x);
	free(y);
	return same;
}

static int copy_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct copy_ctx *c = arg;
	char name[4096], dst[4200], why[512], *data;
	long n;

	(void)size;
	/* the program itself has no name; the vDSO has no file */
	if (c->failed || !info->dlpi_name || !*info->dlpi_name || access(info->dlpi_name, R_OK) != 0)
		return 0;
	snprintf(name, sizeof(name), "%s", info->dlpi_name);
	snprintf(dst, sizeof(dst), "%s/%s", c->dir, basename(name));
	c->n++;
	if (same_file(info->dlpi_name, dst, c->verify))
		return 0;
	n = km_read_file(info->dlpi_name, MAX_OBJECT_BYTES, &data, why, sizeof(why));
	if (n < 0 || km_atomic_write(dst, data, (size_t)n, 0755, (uid_t)-1, (gid_t)-1, 0, why,
				     sizeof(why)) != 0) {
		km_errf(c->err, c->errlen, "%s: %s", info->dlpi_name, why);
		c->failed = 1;
	}
	if (n >= 0)
		free(data);
	return 0;
}

int km_bundle_libs(const char *dir, int verify, char *err, size_t errlen)
{
	struct copy_ctx c = { .dir = dir, .verify = verify, .err = err, .errlen = errlen };

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return km_errf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
	dl_iterate_phdr(copy_one, &c);
	return c.failed ? -1 : c.n;
}

/* The PT_INTERP program header of the image, or NULL with err filled. */
static const Elf64_Phdr *interp_header(const char *data, size_t len, char *err, size_t errlen)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)data;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > len ||
	    (len - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum) {
		km_errf(err, errlen, "not a 64-bit little-endian ELF executable");
		return NULL;
	}
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(data + eh->e_phoff) + i;

		if (ph->p_type != PT_INTERP)
			continue;
		if (ph->p_offset > len || ph->p_filesz > len - ph->p_offset || ph->p_filesz < 2 ||
		    data[ph->p_offset + ph->p_filesz - 1] != '\0') {
			km_errf(err, errlen, "its PT_INTERP is malformed");
			return NULL;
		}
		return ph;
	}
	km_errf(err, errlen, "it names no interpreter (a static executable?)");
	return NULL;
}

int km_bundle_interp_name(const char *data, size_t len, char *name, size_t namelen, char *err,
			  size_t errlen)
{
	const Elf64_Phdr *ph = interp_header(data, len, err, errlen);
	const char *path, *slash;

	if (!ph)
		return -1;
	path = data + ph->p_offset;
	slash = strrchr(path, '/');
	snprintf(name, namelen, "%s", slash ? slash + 1 : path);
	return 0;
}

int km_bundle_set_interp(char *data, size_t len, const char *loader, char *err, size_t errlen)
{
	const Elf64_Phdr *ph = interp_header(data, len, err, errlen);
	size_t room, need = strlen(loader);
	char *at;

	if (!ph)
		return -1;
	room = ph->p_filesz - 1;
	if (loader[0] != '/' || need > room)
		return km_errf(err, errlen, "the loader path %s does not fit the %zu bytes of the "
			       "binary's interpreter path", loader, room);
	at = data + ph->p_offset;
	memset(at, '/', room - need); /* "//x" is "/x" */
	memcpy(at + room - need, loader, need + 1);
	return 0;
}

int km_bundle_remove(const char *dir, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4200];
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0 : km_errf(err, errlen, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) != 0 && errno != ENOENT)
			rc = km_errf(err, errlen, "cannot remove %s: %s", path, strerror(errno));
	}
	closedir(d);
	if (!rc && rmdir(dir) != 0 && errno != ENOENT)
		rc = km_errf(err, errlen, "cannot remove %s: %s", dir, strerror(errno));
	return rc;
}
