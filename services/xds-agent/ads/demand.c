/* demand.c — the keys an on-demand node has asked istiod for (demand.h). */
#include "services/xds-agent/ads/demand.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void km_demand_init(struct km_demand *d, size_t max)
{
	memset(d, 0, sizeof(*d));
	km_name_map_init(&d->index);
	d->max = max ? max : KM_DEMAND_MAX_DEFAULT;
}

void km_demand_free(struct km_demand *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->keys[i]);
	free(d->keys);
	km_name_map_free(&d->index);
	memset(d, 0, sizeof(*d));
}

/* A DNS label as Kubernetes names namespaces: [a-z0-9-], 1-63 bytes, no '-' at either end. */
static int label_valid(const char *s, size_t len)
{
	if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
			return 0;
	return 1;
}

/* A DNS name of such labels, at most 253 bytes. istiod's hostnames may hold upper case (a
 * ServiceEntry's host), so any letter is allowed here. */
static int hostname_valid(const char *s)
{
	size_t len = strlen(s), label = 0;

	if (len == 0 || len > 253)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '.') {
			if (label == 0)
				return 0;
			label = 0;
		} else if (isalnum(ch) || ch == '-' || ch == '_' || ch == '*') {
			if (++label > 63)
				return 0;
		} else {
			return 0;
		}
	}
	return label > 0;
}

int km_demand_key_valid(const char *key)
{
	const char *slash = strchr(key, '/');
	unsigned char bin[16];
	size_t len = strlen(key);

	if (!slash || len > KM_DEMAND_KEY_MAX || strchr(slash + 1, '/'))
		return 0;
	for (const char *p = key; p < slash; p++)
		if (!isgraph((unsigned char)*p))
			return 0;
	if (inet_pton(AF_INET, slash + 1, bin) == 1 || inet_pton(AF_INET6, slash + 1, bin) == 1)
		return 1;
	return label_valid(key, (size_t)(slash - key)) && hostname_valid(slash + 1);
}

enum km_demand_rc km_demand_add(struct km_demand *d, const char *key)
{
	char *copy;

	if (!km_demand_key_valid(key)) {
		d->refused_invalid++;
		return KM_DEMAND_INVALID;
	}
	if (km_name_map_find(&d->index, key))
		return KM_DEMAND_KNOWN;
	if (d->n >= d->max) {
		d->refused_full++;
		return KM_DEMAND_FULL;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		char **k = realloc(d->keys, cap * sizeof(*k));

		if (!k) {
			d->refused_full++;
			return KM_DEMAND_FULL;
		}
		d->keys = k;
		d->cap = cap;
	}
	copy = strdup(key);
	if (!copy || km_name_map_add(&d->index, copy, copy) != 0) {
		free(copy);
		d->refused_full++;
		return KM_DEMAND_FULL;
	}
	d->keys[d->n++] = copy;
	return KM_DEMAND_NEW;
}

size_t km_demand_unsent(const struct km_demand *d, char *const **first)
{
	size_t n = d->n - d->sent;

	*first = d->keys + d->sent;
	return n < KM_DEMAND_PER_REQUEST ? n : KM_DEMAND_PER_REQUEST;
}

void km_demand_mark_sent(struct km_demand *d, size_t count)
{
	d->sent += count;
	if (d->sent > d->n)
		d->sent = d->n;
}

void km_demand_resend_all(struct km_demand *d)
{
	d->sent = 0;
}

int km_demand_save(const struct km_demand *d, const char *path)
{
	char tmp[4096];
	FILE *f;
	int err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (!(f = fopen(tmp, "w")))
		return -1;
	for (size_t i = 0; i < d->n && !err; i++)
		if (fputs(d->keys[i], f) < 0 || fputc('\n', f) < 0)
			err = errno ? errno : EIO;
	if (fflush(f) != 0 && !err)
		err = errno;
	if (fclose(f) != 0 && !err)
		err = errno;
	if (!err && rename(tmp, path) != 0)
		err = errno;
	if (err) {
		unlink(tmp);
		errno = err;
		return -1;
	}
	return 0;
}

long km_demand_load(struct km_demand *d, const char *path, size_t *bad)
{
	char line[KM_DEMAND_KEY_MAX + 2];
	struct stat st;
	long added = 0;
	FILE *f = fopen(path, "r");

	*bad = 0;
	if (!f)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fileno(f), &st) == 0 && (uint64_t)st.st_size > (uint64_t)d->max * (KM_DEMAND_KEY_MAX + 1)) {
		fclose(f);
		errno = EFBIG;
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (n && line[n - 1] == '\n') {
			line[--n] = 0;
		} else if (!feof(f)) { /* longer than any key: skip the rest of the line */
			int ch;

			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			(*bad)++;
			continue;
		}
		switch (km_demand_add(d, line)) {
		case KM_DEMAND_NEW:
			added++;
			break;
		case KM_DEMAND_KNOWN:
			break;
		default:
			(*bad)++;
		}
	}
	fclose(f);
	return added;
}
