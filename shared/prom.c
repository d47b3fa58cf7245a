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

	/* memcpy, not snprintf: the agent formats 24 labels per connection report (a third of
	 * its time in a stream's report went to vfprintf) */
	for (size_t i = 0; i < n; i++) {
		const char *k = pairs[2 * i], *v = pairs[2 * i + 1];
		size_t kl = strlen(k);

		if (!v || !*v)
			v = empty_as;
		if (o + (i ? 1 : 0) + kl + 2 >= len)
			return -1;
		if (i)
			out[o++] = ',';
		memcpy(out + o, k, kl);
		o += kl;
		out[o++] = '=';
		out[o++] = '"';
		while (*v) {
			size_t run = strcspn(v, "\\\"\n");

			if (o + run >= len)
				return -1;
			memcpy(out + o, v, run);
			o += run;
			v += run;
			if (*v) {
				if (o + 2 >= len)
					return -1;
				out[o++] = '\\';
				out[o++] = *v == '\n' ? 'n' : *v;
				v++;
			}
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

/* ---- grouping a page's families ---------------------------------------------------------- */

struct family {
	char name[128];
	struct km_prom text;
	int help, type; /* its HELP and TYPE lines are in text */
};

/* The metric name a line is about: a sample's name, or the name after "# HELP " / "# TYPE ". */
static size_t line_name(const char *line, size_t len, const char **name, int *header)
{
	size_t n = 0;

	*header = 0;
	if (len > 7 && (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7))) {
		*header = line[2] == 'H' ? 1 : 2;
		line += 7;
		len -= 7;
	} else if (line[0] == '#') {
		return 0;
	}
	while (n < len && line[n] != ' ' && line[n] != '{')
		n++;
	*name = line;
	return n;
}

static int family_has(const struct family *f, const char *name, size_t n)
{
	static const char *const suffixes[] = { "", "_bucket", "_sum", "_count" };
	size_t fl = strlen(f->name);

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (n == fl + strlen(suffixes[i]) && !strncmp(name, f->name, fl) &&
		    !strncmp(name + fl, suffixes[i], n - fl))
			return 1;
	return 0;
}

int km_prom_group(struct km_prom *p)
{
	struct family *fams = NULL, *cur = NULL;
	size_t nf = 0, capf = 0;
	struct km_prom out;
	int rc = 0;

	if (!p->buf || p->oom)
		return p->oom ? -1 : 0;
	for (const char *line = p->buf; *line && rc == 0;) {
		const char *end = strchr(line, '\n'), *name = NULL;
		size_t len = end ? (size_t)(end - line) : strlen(line), n;
		int header;

		n = line_name(line, len, &name, &header);
		if (n && n < sizeof(fams[0].name) && !(cur && family_has(cur, name, n) && !header)) {
			cur = NULL;
			for (size_t i = 0; i < nf && !cur; i++)
				if (header ? strlen(fams[i].name) == n && !strncmp(fams[i].name, name, n)
					   : family_has(&fams[i], name, n))
					cur = &fams[i];
			if (!cur) {
				if (nf == capf) {
					size_t c = capf ? capf * 2 : 64;
					struct family *f = realloc(fams, c * sizeof(*f));

					if (!f) {
						rc = -1;
						break;
					}
					fams = f;
					capf = c;
				}
				cur = &fams[nf++];
				memset(cur, 0, sizeof(*cur));
				memcpy(cur->name, name, n);
			}
		}
		if (cur && len && !(header == 1 && cur->help) && !(header == 2 && cur->type)) {
			km_prom_append(&cur->text, line, len);
			km_prom_append(&cur->text, "\n", 1);
			cur->help |= header == 1;
			cur->type |= header == 2;
			if (cur->text.oom)
				rc = -1;
		}
		line = end ? end + 1 : line + len;
	}
	km_prom_init(&out);
	for (size_t i = 0; i < nf && rc == 0; i++)
		km_prom_append(&out, fams[i].text.buf, fams[i].text.len);
	if (rc == 0 && out.oom)
		rc = -1;
	for (size_t i = 0; i < nf; i++)
		km_prom_free(&fams[i].text);
	free(fams);
	if (rc != 0) {
		km_prom_free(&out);
		return -1;
	}
	km_prom_free(p);
	*p = out;
	if (!p->buf) /* nothing was in it */
		km_prom_append(p, "", 0);
	return 0;
}
