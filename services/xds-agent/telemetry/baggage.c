/* baggage.c — see baggage.h. */
#include "services/xds-agent/telemetry/baggage.h"

#include <stdio.h>
#include <string.h>

static int value_ok(const char *v, size_t n)
{
	if (n == 0 || n > KM_BAGGAGE_VALUE_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.' || c == '_'))
			return 0;
	}
	return 1;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* [p, e) without the optional whitespace around it. */
static void trim(const char **p, const char **e)
{
	while (*p < *e && is_space(**p))
		(*p)++;
	while (*e > *p && is_space((*e)[-1]))
		(*e)--;
}

static int key_is(const char *k, size_t n, const char *name)
{
	return n == strlen(name) && !memcmp(k, name, n);
}

/* The field a key fills, or NULL. */
static char *field_of(struct km_baggage *b, const char *k, size_t n)
{
	if (key_is(k, n, "k8s.cluster.name"))
		return b->cluster;
	if (key_is(k, n, "k8s.namespace.name"))
		return b->namespace;
	if (key_is(k, n, "k8s.deployment.name") || key_is(k, n, "k8s.cronjob.name") ||
	    key_is(k, n, "k8s.pod.name") || key_is(k, n, "k8s.job.name"))
		return b->workload;
	if (key_is(k, n, "service.name"))
		return b->service;
	if (key_is(k, n, "service.version"))
		return b->version;
	return NULL;
}

int km_baggage_parse(const char *text, size_t len, struct km_baggage *out)
{
	const char *p = text, *end = text + len;
	int taken = 0;

	memset(out, 0, sizeof(*out));
	if (len > KM_BAGGAGE_MAX)
		return -1;
	while (p < end) {
		const char *m_end = memchr(p, ',', (size_t)(end - p));
		const char *k = p, *k_end, *v, *v_end, *eq, *semi;
		char *field;

		if (!m_end)
			m_end = end;
		semi = memchr(p, ';', (size_t)(m_end - p)); /* properties: not read */
		v_end = semi ? semi : m_end;
		eq = memchr(p, '=', (size_t)(v_end - p));
		p = m_end < end ? m_end + 1 : end;
		if (!eq)
			continue;
		k_end = eq;
		v = eq + 1;
		trim(&k, &k_end);
		trim(&v, &v_end);
		field = field_of(out, k, (size_t)(k_end - k));
		if (!field || field[0] || !value_ok(v, (size_t)(v_end - v)))
			continue; /* unknown, a repeat (the first counts), or not a name */
		memcpy(field, v, (size_t)(v_end - v));
		field[v_end - v] = '\0';
		taken++;
	}
	return taken;
}

int km_baggage_format(const struct km_wl_who *who, const struct km_wl_where *where, char *out,
		      size_t len)
{
	char kind_key[40];
	const char *pairs[][2] = {
		{ "k8s.cluster.name", who->cluster_id },
		{ "k8s.namespace.name", who->namespace },
		{ kind_key, who->workload_name },
		{ "service.name", who->canonical_name },
		{ "service.version", who->canonical_revision },
		{ "cloud.region", where ? where->region : NULL },
		{ "cloud.availability_zone", where ? where->zone : NULL },
	};
	size_t n = 0;

	snprintf(kind_key, sizeof(kind_key), "k8s.%s.name",
		 who->workload_kind ? who->workload_kind : "deployment");
	if (len)
		out[0] = '\0';
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		int w;

		if (!pairs[i][1] || !*pairs[i][1])
			continue;
		w = snprintf(out + n, len - n, "%s%s=%s", n ? "," : "", pairs[i][0], pairs[i][1]);
		if (w < 0 || (size_t)w >= len - n)
			return -1;
		n += (size_t)w;
	}
	return (int)n;
}
