/* resources.c — resource ownership and comparison (see resources.h). */
#include "services/xds-agent/core/resources.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/core/strpool.h"

_Static_assert(KM_RES_MAX_ADDRESSES < 65536 && KM_RES_MAX_SERVICES_PER_WORKLOAD < 65536 &&
		       KM_RES_MAX_POLICIES < 65536,
	       "a workload's counts are 16-bit (resources.h)");
_Static_assert(KM_RES_MAX_VIPS < 65536 && KM_RES_MAX_PORTS < 65536 && KM_RES_MAX_SCOPES < 256 &&
		       KM_SCOPE_NETWORK < 256,
	       "a service's counts are 16-bit, its scopes bytes (resources.h)");
_Static_assert(sizeof(struct km_service_res) <= 96, "struct km_service_res grew (resources.h)");

static int str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Two runs of n strings, field by field (the same profile: the same pointers). */
static int strs_eq(char *const *a, char *const *b, size_t n)
{
	if (a == b)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (!str_eq(a[i], b[i]))
			return 0;
	return 1;
}

/* memcmp of two arrays of n bytes that may be NULL when n == 0 */
static int same_bytes(const void *a, const void *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
}

int km_waypoint_equal(const struct km_waypoint *a, const struct km_waypoint *b)
{
	return a->kind == b->kind && a->hbone_port == b->hbone_port &&
	       memcmp(&a->addr, &b->addr, sizeof(a->addr)) == 0 && str_eq(a->service, b->service);
}

void km_service_res_free(struct km_service_res *s)
{
	if (s && s->scratch)
		return; /* the scratch block's */
	if (!s || s->packed) {
		free(s);
		return;
	}
	free(s->name);
	free(s->svc_name);
	free(s->namespace);
	free(s->hostname);
	free(s->vips);
	free(s->ports);
	free(s->waypoint.service);
	free(s);
}

static void release_shared(struct km_workload_res *w);

/* An unpacked workload and its own who and where, in one allocation, with its port array. */
struct wl_unpacked {
	struct km_workload_res res;
	struct km_wl_who who;
	struct km_wl_where where;
	struct km_wl_rare rare;
	struct km_port *ports; /* km_workload_res_port_array */
};

static struct wl_unpacked *unpacked_of(const struct km_workload_res *w)
{
	return (struct wl_unpacked *)((const char *)w - offsetof(struct wl_unpacked, res));
}

const struct km_port *km_membership_ports(const struct km_workload_res *w,
					  const struct km_membership *m)
{
	/* a packed workload's port array sits right after its memberships (km_workload_res_pack) */
	const struct km_port *base = w->packed ? (const struct km_port *)(w->services + w->n_services)
					       : unpacked_of(w)->ports;

	return m->n_ports ? base + m->port_at : NULL;
}

struct km_port **km_workload_res_port_array(struct km_workload_res *w)
{
	return &unpacked_of(w)->ports;
}

const struct km_waypoint *km_wl_waypoint(const struct km_workload_res *w)
{
	static const struct km_waypoint none = { .kind = KM_WAYPOINT_NONE };

	return w->rare ? &w->rare->wp : &none;
}

const char *km_wl_hostname(const struct km_workload_res *w)
{
	return w->rare ? w->rare->hostname : NULL;
}

uint32_t km_wl_capacity(const struct km_workload_res *w)
{
	return w->rare ? w->rare->capacity : 1;
}

static struct km_workload_res *unpacked_init(struct wl_unpacked *u)
{
	memset(u, 0, sizeof(*u));
	u->res.who = &u->who;
	u->res.where = &u->where;
	u->res.rare = &u->rare;
	u->rare.capacity = 1;
	return &u->res;
}

struct km_workload_res *km_workload_res_new(void)
{
	struct wl_unpacked *u = malloc(sizeof(*u));

	return u ? unpacked_init(u) : NULL;
}

struct km_workload_res *km_workload_res_new_scratch(void *(*alloc)(void *data, size_t size),
						    void *data)
{
	struct wl_unpacked *u = alloc(data, sizeof(*u));
	struct km_workload_res *w = u ? unpacked_init(u) : NULL;

	if (w)
		w->scratch = 1;
	return w;
}

void km_workload_res_free(struct km_workload_res *w)
{
	if (!w || w->scratch)
		return; /* the scratch block's */
	if (w->packed) {
		release_shared(w);
		free(w);
		return;
	}
	free(w->uid_text);
	free(w->name);
	for (size_t i = 0; w->who && i < sizeof(*w->who) / sizeof(char *); i++)
		free(((char **)w->who)[i]);
	for (size_t i = 0; w->where && i < sizeof(*w->where) / sizeof(char *); i++)
		free(((char **)w->where)[i]);
	free(w->addrs);
	for (size_t i = 0; i < w->n_services; i++)
		free(w->services[i].service);
	free(w->services);
	free(unpacked_of(w)->ports);
	for (size_t i = 0; i < w->n_policies; i++)
		free(w->policies[i]);
	free(w->policies);
	if (w->rare) {
		free(w->rare->wp.service);
		free(w->rare->hostname);
	}
	free(w);
}

/* ---- packing: one allocation per kept resource --------------------------------------------- */

/* Arrays first (8-byte aligned), then strings; sizes are counted with the same helpers. Every
 * array starts 8-byte aligned (the struct before it is, having pointers) and is counted rounded
 * up to 8, so the count is exact: no slack per array (it was 7 bytes each, 16 more per workload
 * once malloc rounded). */
struct pack {
	uint8_t *base;
	size_t off;
};

static size_t array_size(size_t n, size_t elem)
{
	return (n * elem + 7) & ~(size_t)7;
}

static size_t str_size(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

static void *put_array(struct pack *k, const void *src, size_t n, size_t elem)
{
	void *d;

	if (!n)
		return NULL;
	k->off = (k->off + 7) & ~(size_t)7;
	d = k->base + k->off;
	memcpy(d, src, n * elem);
	k->off += n * elem;
	return d;
}

static char *put_str(struct pack *k, const char *s)
{
	size_t n = str_size(s);
	char *d;

	if (!n)
		return NULL;
	d = (char *)k->base + k->off;
	memcpy(d, s, n);
	k->off += n;
	return d;
}

/* Where a service's hostname sits at the end of its name ("<namespace>/<hostname>", as the
 * converter makes it), or -1. */
static ptrdiff_t hostname_in_name(const char *name, const char *hostname)
{
	size_t ln = name ? strlen(name) : 0, lh = hostname ? strlen(hostname) : 0;

	if (!lh || lh >= ln || name[ln - lh - 1] != '/' || strcmp(name + ln - lh, hostname) != 0)
		return -1;
	return (ptrdiff_t)(ln - lh);
}

struct km_service_res *km_service_res_pack(struct km_service_res *r)
{
	/* the hostname read in the name, where it ends it: not kept twice */
	ptrdiff_t host_at = hostname_in_name(r->name, r->hostname);
	size_t size = sizeof(*r) + array_size(r->n_vips, sizeof(*r->vips)) +
		      array_size(r->n_ports, sizeof(*r->ports)) + str_size(r->name) +
		      str_size(r->svc_name) + str_size(r->namespace) +
		      (host_at < 0 ? str_size(r->hostname) : 0) + str_size(r->waypoint.service);
	struct km_service_res *p;
	struct pack k;

	if (r->packed || !(p = malloc(size)))
		return r;
	k.base = (uint8_t *)p;
	k.off = sizeof(*r);
	*p = *r;
	p->packed = 1;
	p->scratch = 0;
	p->vips = put_array(&k, r->vips, r->n_vips, sizeof(*r->vips));
	p->ports = put_array(&k, r->ports, r->n_ports, sizeof(*r->ports));
	p->name = put_str(&k, r->name);
	p->svc_name = put_str(&k, r->svc_name);
	p->namespace = put_str(&k, r->namespace);
	p->hostname = host_at < 0 ? put_str(&k, r->hostname) : p->name + host_at;
	p->waypoint.service = put_str(&k, r->waypoint.service);
	km_service_res_free(r);
	return p;
}

/* The workload's own string fields, by offset: copied into its allocation, the uid as an
 * interned prefix when it ends with the name (name_in_uid); its hostname too (after its rare
 * fields, which it has when it has a hostname or a waypoint). Its waypoint's service, which many
 * workloads repeat, is interned (strpool.h), as are the service names of its memberships and
 * its policy names; its who and where become profiles (profile_pool.h). */
#define WL_STR(f) offsetof(struct km_workload_res, f)
static const size_t wl_own[] = { WL_STR(uid_text), WL_STR(name) };
#define N_OWN (sizeof(wl_own) / sizeof(wl_own[0]))

/* Where name sits at the end of uid, after a '/', or -1: istiod's Kubernetes uids are
 * "<cluster>//Pod/<namespace>/<name>", so a pod's uid is a prefix its namespace's pods share and
 * its name (often 30 bytes), which it keeps anyway. A uid that would not fit KM_UID_BUF (one
 * the model derives, "<uid>#<n>", may be longer than istiod's bound) is kept whole, so reading
 * a split one never truncates it. */
static ptrdiff_t name_in_uid(const char *uid, const char *name)
{
	size_t lu = uid ? strlen(uid) : 0, ln = name ? strlen(name) : 0;

	if (!ln || ln >= lu || lu >= KM_UID_BUF || uid[lu - ln - 1] != '/' ||
	    memcmp(uid + lu - ln, name, ln) != 0)
		return -1;
	return (ptrdiff_t)(lu - ln);
}

/* The interned prefix of uid before name_at's '/' (NULL when out of memory). */
static const char *intern_prefix(const char *uid, ptrdiff_t name_at)
{
	char prefix[KM_UID_BUF];
	size_t n = (size_t)name_at - 1;

	if (n >= sizeof(prefix))
		return NULL;
	memcpy(prefix, uid, n);
	prefix[n] = 0;
	return km_str_intern(prefix);
}

const char *km_workload_uid(const struct km_workload_res *w, char *buf)
{
	if (!w->uid_split)
		return w->uid_text;
	snprintf(buf, KM_UID_BUF, "%s/%s", w->uid_text, w->name);
	return buf;
}

int km_workload_uid_is(const struct km_workload_res *w, const char *uid)
{
	size_t n;

	if (!w->uid_split)
		return w->uid_text && uid && strcmp(w->uid_text, uid) == 0;
	n = strlen(w->uid_text);
	return uid && strncmp(uid, w->uid_text, n) == 0 && uid[n] == '/' &&
	       strcmp(uid + n + 1, w->name) == 0;
}

char *km_workload_uid_dup(const struct km_workload_res *w)
{
	char buf[KM_UID_BUF];
	const char *uid = km_workload_uid(w, buf);

	return uid ? strdup(uid) : NULL;
}

static char **wl_str(struct km_workload_res *w, size_t off)
{
	return (char **)((uint8_t *)w + off);
}

/* Drop a packed workload's references to interned strings (those set so far, on a failed pack:
 * the rest are NULL). */
static void release_shared(struct km_workload_res *w)
{
	if (w->uid_split)
		km_str_release(w->uid_text);
	km_who_release(w->who);
	km_where_release(w->where);
	if (w->rare)
		km_str_release(w->rare->wp.service);
	for (size_t i = 0; i < w->n_services; i++)
		km_str_release(w->services[i].service);
	for (size_t i = 0; i < w->n_policies; i++)
		km_str_release(w->policies[i]);
}

static char *intern(const char *s, int *failed)
{
	const char *p = s ? km_str_intern(s) : NULL;

	*failed |= s && !p;
	return (char *)p;
}

struct km_workload_res *km_workload_res_pack(struct km_workload_res *r)
{
	/* its rare fields only when it has a waypoint, a hostname or a capacity other than 1: most
	 * have none */
	int has_rare = km_wl_waypoint(r)->kind != KM_WAYPOINT_NONE || km_wl_hostname(r) ||
		       km_wl_capacity(r) != 1;
	size_t size = sizeof(*r) + array_size(r->n_addrs, sizeof(*r->addrs)) +
		      array_size(r->n_services, sizeof(*r->services)) +
		      array_size(r->n_policies, sizeof(*r->policies)) +
		      array_size(has_rare, sizeof(*r->rare)) + str_size(km_wl_hostname(r));
	struct km_workload_res *p;
	struct pack k;
	ptrdiff_t name_at;
	size_t n_ports = 0;
	int failed = 0;

	if (r->packed)
		return r;
	/* split: the uid's prefix interned, its name kept once (as the name) */
	name_at = r->uid_split ? -1 : name_in_uid(r->uid_text, r->name);
	for (size_t i = 0; i < N_OWN; i++)
		size += str_size(*wl_str(r, wl_own[i]));
	if (name_at >= 0)
		size -= str_size(r->uid_text);
	for (size_t i = 0; i < r->n_services; i++)
		n_ports += r->services[i].n_ports;
	size += array_size(n_ports, sizeof(struct km_port));
	k.base = malloc(size);
	k.off = sizeof(*r);
	if (!(p = (struct km_workload_res *)k.base))
		return r;
	*p = *r;
	p->packed = 1;
	p->scratch = 0;
	p->addrs = put_array(&k, r->addrs, r->n_addrs, sizeof(*r->addrs));
	p->services = put_array(&k, r->services, r->n_services, sizeof(*r->services));
	/* every membership's ports, in one array right after the memberships (16 bytes each: no
	 * gap), where km_membership_ports finds it */
	n_ports = 0;
	for (size_t i = 0; i < r->n_services; i++) {
		const struct km_port *from = km_membership_ports(r, &r->services[i]);

		p->services[i].port_at = (uint32_t)n_ports;
		if (from)
			memcpy((struct km_port *)(p->services + p->n_services) + n_ports, from,
			       r->services[i].n_ports * sizeof(*from));
		n_ports += r->services[i].n_ports;
	}
	k.off += array_size(n_ports, sizeof(struct km_port));
	p->policies = put_array(&k, r->policies, r->n_policies, sizeof(*r->policies));
	p->rare = put_array(&k, r->rare, (size_t)has_rare, sizeof(*r->rare));
	/* strings last: no alignment needed */
	for (size_t i = 0; i < N_OWN; i++)
		if (wl_own[i] != WL_STR(uid_text) || name_at < 0)
			*wl_str(p, wl_own[i]) = put_str(&k, *wl_str(r, wl_own[i]));
	if (name_at >= 0) {
		p->uid_text = NULL; /* set with the shared strings below */
		p->uid_split = 1;
	}
	if (p->rare) {
		p->rare->wp.service = NULL;
		p->rare->hostname = put_str(&k, r->rare->hostname);
	}
	for (size_t i = 0; i < r->n_services; i++)
		p->services[i].service = NULL;
	for (size_t i = 0; i < r->n_policies; i++)
		p->policies[i] = NULL;
	/* read only from here on: shared with every workload that has the same */
	if (p->uid_split)
		failed |= !(p->uid_text = (char *)intern_prefix(r->uid_text, name_at));
	p->who = (struct km_wl_who *)km_who_intern(r->who);
	p->where = (struct km_wl_where *)km_where_intern(r->where);
	failed |= !p->who || !p->where;
	if (p->rare)
		p->rare->wp.service = intern(r->rare->wp.service, &failed);
	for (size_t i = 0; i < r->n_services; i++)
		p->services[i].service = intern(r->services[i].service, &failed);
	for (size_t i = 0; i < r->n_policies; i++)
		p->policies[i] = intern(r->policies[i], &failed);
	if (failed) { /* out of memory: keep the unpacked resource */
		release_shared(p);
		free(p);
		return r;
	}
	km_workload_res_free(r);
	return p;
}

int km_service_res_equal(const struct km_service_res *a, const struct km_service_res *b)
{
	return str_eq(a->name, b->name) && a->lb_mode == b->lb_mode && a->n_vips == b->n_vips &&
	       a->n_ports == b->n_ports && a->n_scopes == b->n_scopes &&
	       a->allow_unhealthy == b->allow_unhealthy &&
	       same_bytes(a->vips, b->vips, a->n_vips * sizeof(*a->vips)) &&
	       same_bytes(a->ports, b->ports, a->n_ports * sizeof(*a->ports)) &&
	       same_bytes(a->scopes, b->scopes, a->n_scopes * sizeof(*a->scopes)) &&
	       km_waypoint_equal(&a->waypoint, &b->waypoint);
}

int km_workload_res_equal(const struct km_workload_res *a, const struct km_workload_res *b)
{
	char buf[KM_UID_BUF];

	if (!km_workload_uid_is(a, km_workload_uid(b, buf)) || !str_eq(a->name, b->name) ||
	    !str_eq(km_wl_hostname(a), km_wl_hostname(b)) || a->status != b->status ||
	    a->n_addrs != b->n_addrs || a->n_services != b->n_services || a->n_policies != b->n_policies ||
	    a->host_network != b->host_network || a->tunnel_hbone != b->tunnel_hbone ||
	    km_wl_capacity(a) != km_wl_capacity(b) ||
	    !strs_eq((char *const *)a->who, (char *const *)b->who,
		     sizeof(*a->who) / sizeof(char *)) ||
	    !strs_eq((char *const *)a->where, (char *const *)b->where,
		     sizeof(*a->where) / sizeof(char *)) ||
	    !km_waypoint_equal(km_wl_waypoint(a), km_wl_waypoint(b)))
		return 0;
	if (!same_bytes(a->addrs, b->addrs, a->n_addrs * sizeof(*a->addrs)))
		return 0;
	for (size_t i = 0; i < a->n_services; i++) {
		const struct km_membership *x = &a->services[i], *y = &b->services[i];

		if (strcmp(x->service, y->service) != 0 || x->n_ports != y->n_ports ||
		    !same_bytes(km_membership_ports(a, x), km_membership_ports(b, y),
				x->n_ports * sizeof(struct km_port)))
			return 0;
	}
	for (size_t i = 0; i < a->n_policies; i++)
		if (strcmp(a->policies[i], b->policies[i]) != 0)
			return 0;
	return 1;
}

static int cmp_membership(const void *a, const void *b)
{
	return strcmp(((const struct km_membership *)a)->service,
		      ((const struct km_membership *)b)->service);
}

int km_workload_res_normalize(struct km_workload_res *w)
{
	if (w->n_services == 0)
		return 0;
	qsort(w->services, w->n_services, sizeof(*w->services), cmp_membership);
	for (size_t i = 1; i < w->n_services; i++)
		if (strcmp(w->services[i - 1].service, w->services[i].service) == 0)
			return -1;
	return 0;
}

const struct km_membership *km_workload_membership(const struct km_workload_res *w,
						   const char *service)
{
	struct km_membership key = { .service = (char *)service };

	if (w->n_services == 0)
		return NULL;
	return bsearch(&key, w->services, w->n_services, sizeof(*w->services), cmp_membership);
}

uint32_t km_target_port(const struct km_service_res *s, const struct km_workload_res *w,
			const struct km_membership *m, uint32_t service_port)
{
	const struct km_port *own = m ? km_membership_ports(w, m) : NULL;

	for (size_t i = 0; own && i < m->n_ports; i++)
		if (own[i].service_port == service_port && own[i].target_port)
			return own[i].target_port;
	for (size_t i = 0; i < s->n_ports; i++)
		if (s->ports[i].service_port == service_port)
			return s->ports[i].target_port ? s->ports[i].target_port : service_port;
	return 0;
}

static int dup_str(char **out, const char *s)
{
	*out = s ? strdup(s) : NULL;
	return s && !*out ? -1 : 0;
}

struct km_workload_res *km_workload_res_with_addrs(const struct km_workload_res *w,
						   const struct km_addr *addrs, size_t n)
{
	struct km_workload_res *c = km_workload_res_new();
	const struct km_waypoint *wp = km_wl_waypoint(w);
	char buf[KM_UID_BUF];
	size_t n_ports = 0;
	int bad = 0;

	if (!c)
		return NULL;
	if (n > KM_RES_MAX_ADDRESSES)
		n = KM_RES_MAX_ADDRESSES;
	bad |= dup_str(&c->uid_text, km_workload_uid(w, buf)) | dup_str(&c->name, w->name) |
	       dup_str(&c->rare->hostname, km_wl_hostname(w));
	for (size_t i = 0; i < sizeof(*w->who) / sizeof(char *); i++)
		bad |= dup_str(&((char **)c->who)[i], ((char *const *)w->who)[i]);
	for (size_t i = 0; i < sizeof(*w->where) / sizeof(char *); i++)
		bad |= dup_str(&((char **)c->where)[i], ((char *const *)w->where)[i]);
	c->rare->wp = *wp;
	c->rare->wp.service = NULL;
	bad |= dup_str(&c->rare->wp.service, wp->service);
	c->rare->capacity = km_wl_capacity(w);
	c->status = w->status;
	c->host_network = w->host_network;
	c->tunnel_hbone = w->tunnel_hbone;
	if (n && !(c->addrs = malloc(n * sizeof(*addrs))))
		bad = 1;
	else if (n)
		memcpy(c->addrs, addrs, n * sizeof(*addrs));
	c->n_addrs = (uint16_t)(c->addrs ? n : 0);
	for (size_t i = 0; i < w->n_services; i++)
		n_ports += w->services[i].n_ports;
	if (w->n_services && !(c->services = calloc(w->n_services, sizeof(*c->services))))
		bad = 1;
	if (n_ports && !(*km_workload_res_port_array(c) = malloc(n_ports * sizeof(struct km_port))))
		bad = 1;
	n_ports = 0;
	for (size_t i = 0; c->services && i < w->n_services; i++, c->n_services++) {
		const struct km_membership *m = &w->services[i];
		struct km_port *ports = *km_workload_res_port_array(c);

		bad |= dup_str(&c->services[i].service, m->service);
		if (!m->n_ports || !ports)
			continue;
		memcpy(ports + n_ports, km_membership_ports(w, m), m->n_ports * sizeof(*ports));
		c->services[i].port_at = (uint32_t)n_ports;
		c->services[i].n_ports = m->n_ports;
		n_ports += m->n_ports;
	}
	if (w->n_policies && !(c->policies = calloc(w->n_policies, sizeof(*c->policies))))
		bad = 1;
	for (size_t i = 0; c->policies && i < w->n_policies; i++, c->n_policies++)
		bad |= dup_str(&c->policies[i], w->policies[i]);
	if (bad) {
		km_workload_res_free(c);
		return NULL;
	}
	return c;
}
