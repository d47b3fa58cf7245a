/* cgroup2.c — see cgroup2.h. */
#include "shared/cgroup2.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int km_cgroup2_mount(const char *within, char *out, size_t len)
{
	char real[PATH_MAX], line[4096];
	size_t best = 0;
	FILE *f;

	if ((within && !realpath(within, real)) || !(f = fopen("/proc/self/mountinfo", "re")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], *sep = strstr(line, " - ");
		size_t n;

		/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPEROPTIONS" */
		if (!sep || strncmp(sep, " - cgroup2 ", 11) ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		n = strlen(mnt);
		if (!within) { /* the first one */
			snprintf(out, len, "%s", mnt);
			best = n;
			break;
		}
		if (n > best && !strncmp(real, mnt, n) && (real[n] == '/' || real[n] == '\0' ||
							    n == 1)) {
			best = n;
			snprintf(out, len, "%s", mnt);
		}
	}
	fclose(f);
	return best ? 0 : -1;
}

uint64_t km_cgroup2_self_id(void)
{
	char line[4096], path[4096], mnt[PATH_MAX] = "";
	struct stat st;
	FILE *f;

	path[0] = '\0';
	if (!(f = fopen("/proc/self/cgroup", "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(path, sizeof(path), "%s", line + 3);
		}
	fclose(f);
	if (!path[0] || km_cgroup2_mount(NULL, mnt, sizeof(mnt)) != 0 ||
	    strlen(mnt) + strlen(path) + 1 >= sizeof(line))
		return 0;
	strcpy(line, mnt); /* (lengths checked above) */
	if (strcmp(path, "/"))
		strcat(line, path);
	return stat(line, &st) == 0 ? (uint64_t)st.st_ino : 0;
}
