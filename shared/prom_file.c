/* prom_file.c — see prom_file.h. */
#include "shared/prom_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/atomic_file.h"
#include "shared/log.h"

void km_prom_file_init(struct km_prom_file *f, const char *dir, const char *name)
{
	memset(f, 0, sizeof(*f));
	if (!dir || !*dir)
		return;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		km_warn("cannot make the metrics directory %s: %s; no metrics file", dir,
			strerror(errno));
		return;
	}
	snprintf(f->path, sizeof(f->path), "%s/%s.prom", dir, name);
}

void km_prom_file_write(struct km_prom_file *f, struct km_prom *p)
{
	char err[256];

	if (f->path[0] && !p->oom && p->buf &&
	    (!f->last || strcmp(f->last, p->buf) || ++f->unchanged >= KM_PROM_FILE_REFRESH)) {
		f->unchanged = 0;
		if (km_atomic_write(f->path, p->buf, p->len, 0644, (uid_t)-1, (gid_t)-1,
				    KM_ATOMIC_NOSYNC, err, sizeof(err)) == 0) {
			free(f->last);
			f->last = p->buf;
			p->buf = NULL;
		} else if (!f->failures++) {
			km_warn("cannot write the metrics file %s: %s", f->path, err);
		}
	}
	km_prom_free(p);
}

void km_prom_file_free(struct km_prom_file *f)
{
	free(f->last);
	f->last = NULL;
	if (f->path[0])
		unlink(f->path);
}
