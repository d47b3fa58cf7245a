/* prom.c — Prometheus text format writer (see prom.h). */
#include "shared/prom.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void km_prom_init(struct km_prom *p)
{
	memset(p, 0, sizeof(*p));
}

void km_prom_free(struct km_prom *p)
{
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

static int reserve(struct km_prom *p, size_t more)
{
	size_t cap = p->cap ? p->cap : 4096;
	char *b;

	if (p->oom)
		return -1;
	while (cap < p->len + more + 1)
		cap *= 2;
	if (cap == p->cap)
		return 0;
	if (!(b = realloc(p->buf, cap))) {
		p->oom = 1;
		return -1;
	}
	p->buf = b;
	p->cap = cap;
	return 0;
}

void km_prom_append(struct km_prom *p, const char *text, size_t len)
{
	if (reserve(p, len) != 0)
		return;
	memcpy(p->buf + p->len, text, len);
	p->len += len;
	p->buf[p->len] = '\0';
}

void km_prom_printf(struct km_prom *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(p, (size_t)n) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(p->buf + p->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	p->len += (size_t)n;
}

void km_prom_family(struct km_prom *p, const char *name, const char *type, const char *help)
{
	km_prom_printf(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void km_prom_sample(struct km_prom *p, const char *name, const char *labels, uint64_t value)
{
	if (labels && *labels)
		km_prom_printf(p, "%s{%s} %llu\n", name, labels, (unsigned long long)value);
	else
		km_prom_printf(p, "%s %llu\n", name, (unsigned long long)value);
}

void km_prom_metric(struct km_prom *p, const char *name, const char *type, const char *help,
		    uint64_t value)
{
	km_prom_family(p, name, type, help);
	km_prom_sample(p, name, "", value);
}

int km_prom_labels(char *out, size_t len, const char *const *pairs, size_t n, const char *empty_as)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		const char *k = pairs[2 * i], *v = pairs[2 * i + 1];
		int w;

		if (!v || !*v)
			v = empty_as;
		w = snprintf(out + o, len - o, "%s%s=\"", i ? "," : "", k);
		if (w < 0 || (size_t)w >= len - o)
			return -1;
		o += (size_t)w;
		for (; *v; v++) {
			const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
			size_t need = esc ? 2 : 1;

			if (o + need >= len)
				return -1;
			if (esc) {
				memcpy(out + o, esc, 2);
			} else {
				out[o] = *v;
			}
			o += need;
		}
		if (o + 2 > len)
			return -1;
		out[o++] = '"';
		out[o] = '\0';
	}
	if (!n && len)
		out[0] = '\0';
	return (int)o;
}

void km_prom_histogram(struct km_prom *p, const char *name, const char *labels,
		       const double *bounds, const uint64_t *counts, size_t n, double sum)
{
	const char *sep = labels && *labels ? "," : "";
	uint64_t cum = 0;

	if (!labels)
		labels = "";
	for (size_t i = 0; i < n; i++) {
		cum += counts[i];
		km_prom_printf(p, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, bounds[i],
			       (unsigned long long)cum);
	}
	cum += counts[n];
	km_prom_printf(p, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
		       (unsigned long long)cum);
	km_prom_printf(p, "%s_sum%s%s%s %.17g\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
		       sum);
	km_prom_printf(p, "%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels,
		       *labels ? "}" : "", (unsigned long long)cum);
}
