/* cni_state.c — the plugin's state files and counters (see cni_state.h). */
#include "services/cni-plugin/cni_state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/atomic_file.h"
#include "shared/errbuf.h"
#include "shared/log.h"

#define KM_CNI_MAX_SERIES 128
#define KM_CNI_SERIES_LEN 160

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -1;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, mode) != 0 && errno != EEXIST ? -1 : 0;
}

int km_cni_state_init(const char *dir, char *err, size_t errlen)
{
	char sub[4200], pend[4200], und[4200];

	snprintf(sub, sizeof(sub), "%s/containers", dir);
	snprintf(pend, sizeof(pend), "%s/pending", dir);
	snprintf(und, sizeof(und), "%s/" KM_CNI_UNDECIDED_DIR, dir);
	if (mkdir_p(dir, 0700) != 0 || mkdir_p(sub, 0700) != 0 || mkdir_p(pend, 0700) != 0 ||
	    mkdir_p(und, 0700) != 0)
		return km_errf(err, errlen, "cannot create the state directory %s: %s", sub,
			       strerror(errno));
	return 0;
}

int km_cni_state_save(const char *dir, const char *container_id, uint64_t cookie,
		      const char *pod, char *err, size_t errlen)
{
	char path[4500], text[600];
	int n = snprintf(text, sizeof(text), "%" PRIu64 " %.500s\n", cookie, pod);

	snprintf(path, sizeof(path), "%s/containers/%s", dir, container_id);
	return km_atomic_write(path, text, (size_t)n, 0600, (uid_t)-1, (gid_t)-1,
			       KM_ATOMIC_NOSYNC, err, errlen); /* cookies mean nothing after a reboot */
}

int km_cni_state_load(const char *dir, const char *container_id, uint64_t *cookie)
{
	char path[4500], why[256], *text;
	int rc;

	snprintf(path, sizeof(path), "%s/containers/%s", dir, container_id);
	if (km_read_file(path, 4096, &text, why, sizeof(why)) < 0)
		return errno == ENOENT ? -ENOENT : -(errno ? errno : EIO);
	rc = sscanf(text, "%" SCNu64, cookie) == 1 ? 0 : -EBADMSG;
	free(text);
	return rc;
}

void km_cni_state_remove(const char *dir, const char *container_id)
{
	char path[4500];

	snprintf(path, sizeof(path), "%s/containers/%s", dir, container_id);
	if (unlink(path) != 0 && errno != ENOENT)
		km_warn("cannot remove %s: %s", path, strerror(errno));
}

/* A record under dir/sub/<container id>, written whole (atomically). */
static int record_save(const char *dir, const char *sub, const char *container_id,
		       const uint8_t *data, size_t len, char *err, size_t errlen)
{
	char path[4500];

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, container_id);
	return km_atomic_write(path, data, len, 0600, (uid_t)-1, (gid_t)-1, KM_ATOMIC_NOSYNC, err,
			       errlen);
}

/* Remove it under its lock (its consumer holds the lock while it applies one). */
static int record_remove(const char *dir, const char *sub, const char *container_id)
{
	char path[4500];
	int fd, had;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, container_id);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	flock(fd, LOCK_EX); /* waits while the consumer applies it */
	had = unlink(path) == 0;
	close(fd);
	return had;
}

int km_cni_pending_save(const char *dir, const char *container_id, const uint8_t *env,
			size_t len, char *err, size_t errlen)
{
	return record_save(dir, "pending", container_id, env, len, err, errlen);
}

int km_cni_pending_remove(const char *dir, const char *container_id)
{
	return record_remove(dir, "pending", container_id);
}

int km_cni_undecided_save(const char *dir, const char *container_id, const uint8_t *env,
			  size_t len, char *err, size_t errlen)
{
	return record_save(dir, KM_CNI_UNDECIDED_DIR, container_id, env, len, err, errlen);
}

int km_cni_undecided_remove(const char *dir, const char *container_id)
{
	return record_remove(dir, KM_CNI_UNDECIDED_DIR, container_id);
}

struct series {
	char name[KM_CNI_SERIES_LEN];
	unsigned long long value;
};

/* The metric name of a series: the part before '{'. */
static size_t name_len(const char *series)
{
	return strcspn(series, "{ ");
}

void km_cni_metric_inc(const char *dir, const char *series)
{
	static struct series rows[KM_CNI_MAX_SERIES];
	char path[4200], lock[4200], why[512], *text = NULL, *line, *save;
	size_t n = 0, i, len = 0, cap = 65536;
	char *out;
	int fd;

	if (strlen(series) >= KM_CNI_SERIES_LEN)
		return;
	snprintf(path, sizeof(path), "%s/metrics.prom", dir);
	snprintf(lock, sizeof(lock), "%s/metrics.lock", dir);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) != 0) {
		km_warn("metrics: cannot lock %s: %s", lock, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	if (km_read_file(path, cap / 2, &text, why, sizeof(why)) >= 0) {
		for (line = strtok_r(text, "\n", &save); line && n < KM_CNI_MAX_SERIES;
		     line = strtok_r(NULL, "\n", &save)) {
			char *sp = strrchr(line, ' ');

			if (line[0] == '#' || !sp || (size_t)(sp - line) >= KM_CNI_SERIES_LEN)
				continue;
			memcpy(rows[n].name, line, (size_t)(sp - line));
			rows[n].name[sp - line] = '\0';
			rows[n].value = strtoull(sp + 1, NULL, 10);
			n++;
		}
	}
	free(text);
	for (i = 0; i < n && strcmp(rows[i].name, series); i++)
		;
	if (i == n && n < KM_CNI_MAX_SERIES) {
		/* a new series goes after the others of its metric, so each metric is one block */
		size_t nl = name_len(series);

		for (i = n; i > 0; i--)
			if (name_len(rows[i - 1].name) == nl && !strncmp(rows[i - 1].name, series, nl))
				break;
		if (i == 0)
			i = n;
		memmove(&rows[i + 1], &rows[i], (n - i) * sizeof(rows[0]));
		snprintf(rows[i].name, KM_CNI_SERIES_LEN, "%s", series);
		rows[i].value = 0;
		n++;
	}
	if (i < n)
		rows[i].value++;
	out = malloc(cap);
	for (i = 0; out && i < n; i++) {
		size_t nl = name_len(rows[i].name);

		/* a TYPE line before the first series of each metric */
		if (i == 0 || nl != name_len(rows[i - 1].name) ||
		    strncmp(rows[i].name, rows[i - 1].name, nl))
			len += (size_t)snprintf(out + len, cap - len, "# TYPE %.*s counter\n",
						(int)nl, rows[i].name);
		len += (size_t)snprintf(out + len, cap - len, "%s %llu\n", rows[i].name,
					rows[i].value);
	}
	if (out && km_atomic_write(path, out, len, 0644, (uid_t)-1, (gid_t)-1, KM_ATOMIC_NOSYNC, why,
				   sizeof(why)))
		km_warn("metrics: %s", why);
	free(out);
	flock(fd, LOCK_UN);
	close(fd);
}
