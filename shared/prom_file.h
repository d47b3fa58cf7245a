/* prom_file.h — a process's metrics as a file for the node's metrics endpoint (the xDS agent
 * serves every *.prom file of the metrics directory): <dir>/<name>.prom, mode 0644, replaced
 * atomically when its text changed and at least every KM_PROM_FILE_REFRESH writes in any case
 * (the endpoint skips files gone stale), removed when the process stops. Used by the processes
 * that serve no HTTP themselves (the IPsec agent, the tunnel). */
#ifndef KM_SHARED_PROM_FILE_H
#define KM_SHARED_PROM_FILE_H

#include <stdint.h>

#include "shared/prom.h"

#define KM_PROM_FILE_REFRESH 15 /* an unchanged text is written again after this many calls */

struct km_prom_file {
	char path[4096]; /* "" : none */
	char *last;      /* the text last written */
	unsigned unchanged; /* writes skipped since */
	uint64_t failures;
};

/* dir "" or NULL: no file. A directory that cannot be made is logged (no file then). */
void km_prom_file_init(struct km_prom_file *f, const char *dir, const char *name);
/* Write p's text if it changed (or was unchanged for KM_PROM_FILE_REFRESH calls); p is then
 * freed. Failures are logged once and counted. */
void km_prom_file_write(struct km_prom_file *f, struct km_prom *p);
/* Remove the file: a stopped process has no metrics to serve. */
void km_prom_file_free(struct km_prom_file *f);

#endif
