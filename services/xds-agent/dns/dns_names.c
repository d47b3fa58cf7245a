/* dns_names.c — see dns_names.h. */
#include "services/xds-agent/dns/dns_names.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "shared/grow.h"

struct dns_name {
	char *host;          /* lowercase */
	const char **names;  /* the services carrying it: their resource names (the model's) */
	size_t n, cap;
	UT_hash_handle hh;
};

static char *lower(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(n + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i <= n; i++)
		out[i] = (char)tolower((unsigned char)s[i]);
	if (n && out[n - 1] == '.')
		out[n - 1] = '\0';
	return out;
}

void km_dns_names_service(void *arg, const struct km_service_res *r, int add)
{
	struct km_dns_names *t = arg;
	struct dns_name *e;
	char *host;

	if (!r->hostname || !*r->hostname || !(host = lower(r->hostname))) {
		if (r->hostname && *r->hostname)
			t->oom = 1;
		return;
	}
	HASH_FIND_STR(t->by_host, host, e);
	if (add) {
		if (!e) {
			if (!(e = calloc(1, sizeof(*e)))) {
				t->oom = 1;
				free(host);
				return;
			}
			e->host = host;
			host = NULL;
			HASH_ADD_KEYPTR(hh, t->by_host, e->host, strlen(e->host), e);
			t->n++;
		}
		if (km_grow((void **)&e->names, &e->cap, e->n + 1, sizeof(*e->names)) != 0)
			t->oom = 1;
		else
			e->names[e->n++] = r->name;
	} else if (e) {
		for (size_t i = 0; i < e->n; i++)
			if (e->names[i] == r->name) {
				e->names[i] = e->names[--e->n];
				break;
			}
		if (!e->n) {
			HASH_DEL(t->by_host, e);
			free(e->host);
			free(e->names);
			free(e);
			t->n--;
		}
	}
	free(host);
}

const char *km_dns_names_find(const struct km_dns_names *t, const char *host)
{
	struct dns_name *e;

	HASH_FIND_STR(t->by_host, host, e);
	return e && e->n ? e->names[0] : NULL;
}

void km_dns_names_free(struct km_dns_names *t)
{
	struct dns_name *e, *tmp;

	HASH_ITER(hh, t->by_host, e, tmp) {
		HASH_DEL(t->by_host, e);
		free(e->host);
		free(e->names);
		free(e);
	}
	t->n = 0;
}
