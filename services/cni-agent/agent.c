/* agent.c — the CNI agent's calls, annotations and reconcile (see agent.h). */
#include "services/cni-agent/agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "services/cni-agent/enroll_rule.h"
#include "services/cni-plugin/cni_state.h"
#include "shared/atomic_file.h"
#include "shared/log.h"

#define R(x) KMESH__IPC__CNI_OUTCOME__RESULT__##x
#define ANNOTATION "kmesh.net/redirection"
#define HBONE_ANNOTATION "ambient.istio.io/redirection" /* istiod: the pod takes HBONE */
#define TICK_MS 50
#define GC_EVERY_MS 30000
#define ANNOTATE_BACKOFF_MAX_MS 30000
#define MAX_FRAME (64u << 10)
#define MAX_WAITING 4096 /* calls waiting for the cache; more are answered at once */

typedef Kmesh__Ipc__CniOutcome__Result cni_result;

/* One call being answered: from the plugin (serial != 0), or an undecided record the reconcile
 * took (serial 0: fd holds the record's lock until it is done). */
struct km_cni_req {
	struct km_cni_agent *a;
	uint64_t serial, request_id;
	km_envelope *env;      /* the CniCall (a copy) */
	uint8_t *packed;       /* ... packed, to keep as an undecided record */
	size_t packed_len;
	uint64_t deadline_ms;  /* waiting for the cache until then; 0: not yet waited */
	int fetching;          /* a GET is in flight */
	int fd;                /* a record's lock; -1 */
	char record[4500];     /* a record's path */
	struct km_enroll_decision d;
	struct km_cni_req *next;
};

struct km_cni_annotation {
	char ns[254], name[254];
	uint64_t next_ms, backoff_ms;
	struct km_cni_annotation *next;
};

static const Kmesh__Ipc__CniCall *call_of(const struct km_cni_req *r)
{
	return r->env->cni_call;
}

static void metric(struct km_cni_agent *a, const char *series)
{
	km_cni_metric_inc(a->cfg->state_dir, series);
}

static void req_free(struct km_cni_req *r)
{
	if (r->fd >= 0)
		close(r->fd); /* the record's lock */
	km_msg_free(r->env);
	free(r->packed);
	free(r);
}

static void unlink_waiting(struct km_cni_req *r)
{
	for (struct km_cni_req **p = &r->a->waiting; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			return;
		}
}

/* The call's answer: to the plugin, or for a record, what happens to the record. */
static void answer(struct km_cni_req *r, cni_result res, int pending, const char *why)
{
	struct km_cni_agent *a = r->a;
	const Kmesh__Ipc__CniCall *cc = call_of(r);

	if (r->serial) {
		struct km_ipc_session *s = km_ipc_server_session(&a->srv, r->serial);
		km_envelope env = KMESH__IPC__ENVELOPE__INIT;
		Kmesh__Ipc__Reply rep = KMESH__IPC__REPLY__INIT;
		Kmesh__Ipc__CniOutcome out = KMESH__IPC__CNI_OUTCOME__INIT;

		out.result = res;
		out.why = (char *)why;
		out.pending = pending;
		rep.code = KMESH__IPC__CODE__OK;
		rep.body_case = KMESH__IPC__REPLY__BODY_CNI;
		rep.cni = &out;
		env.request_id = r->request_id;
		env.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
		env.reply = &rep;
		if (s)
			km_msg_send(&s->conn, &env);
		else
			km_info("%s/%s: the plugin left before its answer (%s)", cc->pod_namespace,
				cc->pod_name, why);
	} else if (res != R(KUBE_UNAVAILABLE) && res != R(MAP_WRITER_UNAVAILABLE)) {
		/* a record is done with: enrolled, or left out for good */
		unlink(r->record);
		if (res != R(ENROLLED))
			km_cni_state_remove(a->cfg->state_dir, cc->container_id);
		km_info("reconcile: %s/%s (container %.64s): %s", cc->pod_namespace, cc->pod_name,
			cc->container_id, res == R(ENROLLED) ? "enrolled" : why);
		metric(a, res == R(ENROLLED) ? "kmesh_cni_agent_reconciled_total{action=\"enrolled\"}"
					     : "kmesh_cni_agent_reconciled_total{action=\"left_out\"}");
	}
	req_free(r);
}

/* An ADD that cannot finish now: kept as an undecided record for the reconcile. */
static void keep_for_later(struct km_cni_req *r)
{
	char why[256];

	if (!r->serial)
		return; /* it is a record already */
	if (km_cni_undecided_save(r->a->cfg->state_dir, call_of(r)->container_id, r->packed,
				  r->packed_len, why, sizeof(why)) != 0)
		km_warn("%s/%s: cannot keep the ADD for later: %s", call_of(r)->pod_namespace,
			call_of(r)->pod_name, why);
}

/* ---- annotations -------------------------------------------------------------------------- */

static void annotate_later(struct km_cni_agent *a, const char *ns, const char *name)
{
	struct km_cni_annotation *n;

	if (!a->cfg->annotate)
		return;
	for (n = a->annotations; n; n = n->next)
		if (!strcmp(n->ns, ns) && !strcmp(n->name, name))
			return;
	n = calloc(1, sizeof(*n));
	if (!n)
		return;
	snprintf(n->ns, sizeof(n->ns), "%s", ns);
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->backoff_ms = 500;
	n->next = a->annotations;
	a->annotations = n;
}

static int annotated_with(const json_t *pod, const char *key)
{
	const char *v = json_string_value(json_object_get(
		json_object_get(json_object_get(pod, "metadata"), "annotations"), key));

	return v && !strcmp(v, "enabled");
}

static int annotated(const struct km_cni_agent *a, const json_t *pod)
{
	return annotated_with(pod, ANNOTATION) && (!a->cfg->hbone ||
						   annotated_with(pod, HBONE_ANNOTATION));
}

static void annotate_pass(struct km_cni_agent *a);

static void on_patched(struct km_kube_call *call)
{
	struct km_cni_agent *a = call->arg;
	struct km_cni_annotation *n;

	a->patching = 0;
	for (n = a->annotations; n; n = n->next) {
		char key[600];

		snprintf(key, sizeof(key), "%s/%s", n->ns, n->name);
		if (!strcmp(key, call->key))
			break;
	}
	if (n && call->status == 200) {
		n->next_ms = UINT64_MAX; /* done: dropped by the next pass */
		if (call->out)
			km_pod_cache_put_pod(&a->cache, call->out);
		metric(a, "kmesh_cni_agent_annotations_total{result=\"ok\"}");
	} else if (n) {
		km_warn("annotating %s %s=enabled: %s (again in %" PRIu64 " ms)", call->key,
			ANNOTATION, call->why, n->backoff_ms);
		n->next_ms = uv_now(a->loop) + n->backoff_ms;
		n->backoff_ms = n->backoff_ms * 2 > ANNOTATE_BACKOFF_MAX_MS ? ANNOTATE_BACKOFF_MAX_MS
									   : n->backoff_ms * 2;
		metric(a, "kmesh_cni_agent_annotations_total{result=\"failed\"}");
	}
	km_kube_call_free(call);
	annotate_pass(a); /* the next one at once, not at the next tick */
}

/* One pass: drop what is done or gone, PATCH the first one due (one at a time). */
static void annotate_pass(struct km_cni_agent *a)
{
	uint64_t now = uv_now(a->loop);

	for (struct km_cni_annotation **p = &a->annotations; *p;) {
		struct km_cni_annotation *n = *p;
		const json_t *pod = km_pod_cache_pod(&a->cache, n->ns, n->name);

		if (n->next_ms == UINT64_MAX || (pod && annotated(a, pod)) ||
		    (!pod && a->cache.pods_listed && n->backoff_ms > 500)) {
			*p = n->next; /* annotated, or the pod is gone */
			free(n);
			continue;
		}
		if (!a->patching && n->next_ms <= now) {
			char path[600];
			struct km_kube_call *call;

			snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", n->ns, n->name);
			call = km_kube_call(&a->patches, "PATCH", path,
					    a->cfg->hbone
					    ? "{\"metadata\":{\"annotations\":{\"" ANNOTATION
					      "\":\"enabled\",\"" HBONE_ANNOTATION "\":\"enabled\"}}}"
					    : "{\"metadata\":{\"annotations\":{\"" ANNOTATION
					      "\":\"enabled\"}}}",
					    on_patched, a);
			if (call) {
				snprintf(call->key, sizeof(call->key), "%s/%s", n->ns, n->name);
				a->patching = 1;
				n->next_ms = now + a->cfg->timeout_ms * 2; /* until the answer */
			}
		}
		p = &n->next;
	}
}

/* ---- deciding ------------------------------------------------------------------------------ */

static void try_decide(struct km_cni_req *r);

static void on_enrolled(struct km_mw_call *call)
{
	struct km_cni_req *r = call->arg;
	const Kmesh__Ipc__CniCall *cc = call_of(r);

	if (call->code == KMESH__IPC__CODE__OK) {
		annotate_later(r->a, cc->pod_namespace, cc->pod_name);
		km_tunnel_feed_add(&r->a->tunnel, cc->container_id, cc->enroll->netns_cookie,
				   cc->pod_namespace, cc->pod_name, cc->enroll->addresses,
				   cc->enroll->n_addresses);
		answer(r, R(ENROLLED), 0, r->d.why);
	} else if (call->code == KMESH__IPC__CODE__ENCRYPTION_UNAVAILABLE) {
		answer(r, R(ENCRYPTION_UNAVAILABLE), 0, call->why);
	} else { /* unreached, refused (a full table) or unanswered: enrolled again later; an
		  * enroll is idempotent, and a DEL meanwhile withdraws it */
		keep_for_later(r);
		answer(r, R(MAP_WRITER_UNAVAILABLE), 1, call->why);
	}
	free(call);
}

static void on_queried(struct km_mw_call *call)
{
	struct km_cni_req *r = call->arg;
	char why[600];

	if (call->code != KMESH__IPC__CODE__OK && call->code != KMESH__IPC__CODE__NOT_FOUND) {
		answer(r, R(MAP_WRITER_UNAVAILABLE), 0, call->why);
	} else if ((call->code == KMESH__IPC__CODE__OK) == r->d.enroll) {
		answer(r, R(CONSISTENT), 0, r->d.why);
	} else {
		snprintf(why, sizeof(why), "%s: %s", r->d.enroll ? "the pod should be enrolled but is not"
								 : "the pod is enrolled but should not be",
			 r->d.why);
		answer(r, R(INCONSISTENT), 0, why);
	}
	free(call);
}

static void decided(struct km_cni_req *r)
{
	const Kmesh__Ipc__CniCall *cc = call_of(r);
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Enroll en;
	Kmesh__Ipc__EnrollQuery q = KMESH__IPC__ENROLL_QUERY__INIT;
	char pod[520];
	int rc;

	if (cc->command == KMESH__IPC__CNI_CALL__COMMAND__CHECK) {
		q.netns_cookie = cc->enroll->netns_cookie;
		env.body_case = KMESH__IPC__ENVELOPE__BODY_ENROLL_QUERY;
		env.enroll_query = &q;
		rc = km_mw_call(&r->a->mw, &env, on_queried, r);
	} else if (!r->d.enroll) {
		answer(r, R(NOT_ENROLLED), 0, r->d.why);
		return;
	} else {
		en = *cc->enroll;
		snprintf(pod, sizeof(pod), "%s/%s", cc->pod_namespace, cc->pod_name);
		en.pod = pod;
		env.body_case = KMESH__IPC__ENVELOPE__BODY_ENROLL;
		env.enroll = &en;
		rc = km_mw_call(&r->a->mw, &env, on_enrolled, r);
	}
	if (rc != 0) {
		keep_for_later(r);
		answer(r, R(MAP_WRITER_UNAVAILABLE), 1, "the agent's queue to the map writer is full");
	}
}

static void on_fetched(struct km_kube_call *call)
{
	struct km_cni_req *r = call->arg;
	struct km_cni_agent *a = r->a;
	const Kmesh__Ipc__CniCall *cc = call_of(r);
	char why[900];

	r->fetching = 0;
	if (call->status == 200 && call->out) {
		if (strstr(call->path, "/pods/"))
			km_pod_cache_put_pod(&a->cache, call->out);
		else
			km_pod_cache_put_namespace(&a->cache, call->out);
		km_kube_call_free(call);
		try_decide(r);
		return;
	}
	unlink_waiting(r);
	if (call->status == 404 && strstr(call->path, "/pods/")) {
		snprintf(why, sizeof(why), "the API has no pod %s/%s", cc->pod_namespace, cc->pod_name);
		answer(r, R(NOT_ENROLLED), 0, why);
	} else {
		snprintf(why, sizeof(why), "the pod is not in the agent's cache yet and the "
			 "Kubernetes API did not answer: %s %.300s: %.300s", call->method, call->path,
			 call->why);
		if (cc->command == KMESH__IPC__CNI_CALL__COMMAND__ADD)
			keep_for_later(r); /* decided once the cache or the API has it */
		answer(r, R(KUBE_UNAVAILABLE), 0, why);
	}
	km_kube_call_free(call);
}

/* Wait for the cache (until the deadline), then GET path once. Returns 1 while waiting. */
static void wait_or_fetch(struct km_cni_req *r, const char *path)
{
	struct km_cni_agent *a = r->a;
	uint64_t now = uv_now(a->loop);

	if (r->fetching)
		return;
	if (!r->deadline_ms) { /* first miss */
		r->deadline_ms = now + a->cfg->cache_wait_ms;
		metric(a, "kmesh_cni_agent_cache_misses_total");
		r->next = a->waiting;
		a->waiting = r;
	}
	if (now < r->deadline_ms)
		return;
	metric(a, "kmesh_cni_agent_api_fallbacks_total");
	r->fetching = 1;
	if (!km_kube_call(&a->gets, "GET", path, NULL, on_fetched, r)) {
		r->fetching = 0;
		unlink_waiting(r);
		keep_for_later(r);
		answer(r, R(KUBE_UNAVAILABLE), 0, "the agent's queue to the Kubernetes API is full");
	}
}

static void try_decide(struct km_cni_req *r)
{
	struct km_cni_agent *a = r->a;
	const Kmesh__Ipc__CniCall *cc = call_of(r);
	const json_t *pod = km_pod_cache_pod(&a->cache, cc->pod_namespace, cc->pod_name);
	const json_t *ns;
	char path[600];
	int needs_ns;

	if (!pod) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", cc->pod_namespace,
			 cc->pod_name);
		wait_or_fetch(r, path);
		return;
	}
	r->d = km_enroll_decide(pod, NULL, &needs_ns);
	if (needs_ns) {
		ns = km_pod_cache_namespace(&a->cache, cc->pod_namespace);
		if (!ns) {
			snprintf(path, sizeof(path), "/api/v1/namespaces/%s", cc->pod_namespace);
			wait_or_fetch(r, path);
			return;
		}
		r->d = km_enroll_decide(pod, ns, &needs_ns);
	}
	if (r->deadline_ms)
		unlink_waiting(r);
	decided(r);
}

/* ---- DEL ---------------------------------------------------------------------------------- */

static void on_unenrolled(struct km_mw_call *call)
{
	struct km_cni_req *r = call->arg;

	if (call->code == KMESH__IPC__CODE__OK || call->code == KMESH__IPC__CODE__NOT_FOUND) {
		km_tunnel_feed_remove(&r->a->tunnel, call_of(r)->container_id);
		if (!r->serial) { /* a collected container */
			km_cni_state_remove(r->a->cfg->state_dir, call_of(r)->container_id);
			metric(r->a, "kmesh_cni_agent_reconciled_total{action=\"unenrolled\"}");
			km_info("reconcile: %s/%s is gone: container %.64s unenrolled",
				call_of(r)->pod_namespace, call_of(r)->pod_name,
				call_of(r)->container_id);
			req_free(r);
		} else {
			answer(r, R(UNENROLLED), 0, "unenrolled");
		}
	} else if (r->serial) {
		answer(r, R(MAP_WRITER_UNAVAILABLE), 0, call->why);
	} else {
		req_free(r); /* tried again by the next collection */
	}
	free(call);
}

static void unenroll(struct km_cni_req *r)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Unenroll un = KMESH__IPC__UNENROLL__INIT;
	char pod[520];

	snprintf(pod, sizeof(pod), "%s/%s", call_of(r)->pod_namespace, call_of(r)->pod_name);
	un.netns_cookie = call_of(r)->enroll->netns_cookie;
	un.pod = pod;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_UNENROLL;
	env.unenroll = &un;
	if (km_mw_call(&r->a->mw, &env, on_unenrolled, r) != 0) {
		if (r->serial)
			answer(r, R(MAP_WRITER_UNAVAILABLE), 0,
			       "the agent's queue to the map writer is full");
		else
			req_free(r);
	}
}

static void do_del(struct km_cni_req *r)
{
	const Kmesh__Ipc__CniCall *cc = call_of(r);

	/* an ADD of the same container still waiting for the cache is not enrolled after this */
	for (struct km_cni_req *w = r->a->waiting; w; w = w->next)
		if (!strcmp(call_of(w)->container_id, cc->container_id) && w->serial) {
			unlink_waiting(w);
			if (!w->fetching)
				answer(w, R(NOT_ENROLLED), 0, "deleted while the agent waited for the pod");
			break;
		}
	unenroll(r);
}

/* ---- requests ------------------------------------------------------------------------------ */

static int name_ok(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	return n > 0 && n <= max && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* A call's copy (env is the server's) or NULL. */
static struct km_cni_req *req_new(struct km_cni_agent *a, const km_envelope *env)
{
	struct km_cni_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->a = a;
	r->fd = -1;
	r->packed = km_msg_pack(env, &r->packed_len);
	r->env = r->packed ? km_msg_unpack(r->packed, r->packed_len) : NULL;
	if (!r->env) {
		free(r->packed);
		free(r);
		return NULL;
	}
	return r;
}

static void on_request(void *arg, struct km_ipc_session *s, const km_envelope *env)
{
	struct km_cni_agent *a = arg;
	const Kmesh__Ipc__CniCall *cc = env->cni_call;
	struct km_cni_req *r;
	int waiting = 0;

	if (env->body_case == KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL &&
	    s->role == KMESH__IPC__ROLE__ROLE_ADMIN) {
		km_ipc_server_set_log_level(s, env);
		return;
	}
	if (env->body_case != KMESH__IPC__ENVELOPE__BODY_CNI_CALL ||
	    s->role != KMESH__IPC__ROLE__ROLE_CNI) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "the CNI agent takes CniCall from role cni (and SetLogLevel from admin)", 0);
		return;
	}
	if (!name_ok(cc->container_id, 256) || !name_ok(cc->pod_namespace, 63) ||
	    !name_ok(cc->pod_name, 253) || !cc->enroll ||
	    cc->command == KMESH__IPC__CNI_CALL__COMMAND__COMMAND_UNSPECIFIED) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__BAD_REQUEST,
			     "a CniCall needs a command, a container id, the pod's namespace and "
			     "name (no '/') and its enroll fields", 0);
		return;
	}
	for (struct km_cni_req *w = a->waiting; w; w = w->next)
		waiting++;
	if (waiting >= MAX_WAITING || !(r = req_new(a, env))) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__RESOURCE_EXHAUSTED,
			     "the agent is busy: too many calls wait for the cache", 0);
		return;
	}
	r->serial = s->serial;
	r->request_id = env->request_id;
	if (cc->command == KMESH__IPC__CNI_CALL__COMMAND__DEL)
		do_del(r);
	else
		try_decide(r);
}

static int allowed(void *arg, Kmesh__Ipc__Role role, uid_t uid, gid_t gid)
{
	(void)arg;
	(void)gid;
	/* the plugin runs as root (the runtime's); so does kmeshctl for the log level */
	return uid == 0 && (role == KMESH__IPC__ROLE__ROLE_CNI || role == KMESH__IPC__ROLE__ROLE_ADMIN);
}

/* ---- reconcile ---------------------------------------------------------------------------- */

/* Undecided records whose pod the cache now holds are decided; those whose pod has been absent
 * from a whole list for gc_age_s are dropped. A record a DEL is removing (locked) waits. */
static void reconcile_records(struct km_cni_agent *a)
{
	char dir[4200];
	struct dirent **names;
	int n;

	snprintf(dir, sizeof(dir), "%s/" KM_CNI_UNDECIDED_DIR, a->cfg->state_dir);
	n = scandir(dir, &names, NULL, NULL);
	for (int i = 0; i < n; i++) {
		struct km_cni_req *r = NULL;
		char path[4500], why[256], *data = NULL;
		const Kmesh__Ipc__CniCall *cc;
		struct stat st;
		long len;
		int fd;

		if (names[i]->d_name[0] == '.')
			goto next;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			goto next;
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) { /* being removed, or ours in flight */
			close(fd);
			goto next;
		}
		len = km_read_file(path, MAX_FRAME, &data, why, sizeof(why));
		if (len <= 0 || fstat(fd, &st) != 0) {
			close(fd);
			goto next;
		}
		r = calloc(1, sizeof(*r));
		if (r) {
			r->a = a;
			r->fd = fd;
			r->env = km_msg_unpack((const uint8_t *)data, (size_t)len);
			snprintf(r->record, sizeof(r->record), "%s", path);
		} else {
			close(fd);
		}
		if (r && (!r->env || r->env->body_case != KMESH__IPC__ENVELOPE__BODY_CNI_CALL ||
			  !r->env->cni_call->enroll ||
			  !name_ok(r->env->cni_call->pod_namespace, 63) ||
			  !name_ok(r->env->cni_call->pod_name, 253))) {
			km_warn("reconcile: %s is not a CNI call; dropped", path);
			unlink(path);
			req_free(r);
			r = NULL;
		}
		if (!r)
			goto next;
		cc = call_of(r);
		if (!km_pod_cache_pod(&a->cache, cc->pod_namespace, cc->pod_name)) {
			if (a->cache.pods_listed && time(NULL) - st.st_mtime > (time_t)a->cfg->gc_age_s) {
				km_info("reconcile: %s/%s is gone; its undecided ADD is dropped",
					cc->pod_namespace, cc->pod_name);
				unlink(path);
				km_cni_state_remove(a->cfg->state_dir, cc->container_id);
				metric(a, "kmesh_cni_agent_reconciled_total{action=\"dropped\"}");
			}
			req_free(r);
			goto next;
		}
		r->deadline_ms = 1; /* never waits: the cache holds the pod */
		try_decide(r);      /* answer() finishes the record (or keeps it) and unlocks it */
next:
		free(data);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/* A container whose pod the cache lacks: unenrolled only if the API has no such pod either (a
 * wrong --node-name, or a cache behind, must not unenroll live pods). */
static void on_collect_checked(struct km_kube_call *call)
{
	struct km_cni_req *r = call->arg;

	if (call->status == 404) {
		unenroll(r);
	} else {
		if (call->status == 200)
			km_warn("reconcile: pod %s/%s exists but is not in this node's cache: is "
				"--node-name (%s) this node's name?", call_of(r)->pod_namespace,
				call_of(r)->pod_name, r->a->cfg->node_name);
		req_free(r);
	}
	km_kube_call_free(call);
}

/* Containers enrolled for pods that are gone (a DEL that never came, e.g. while the agent was
 * down under fail-open): unenrolled once their pod has been absent from a whole list of the
 * node's pods and the enrollment is older than gc_age_s. */
static void collect(struct km_cni_agent *a)
{
	char dir[4200];
	struct dirent **names;
	int n;

	if (!a->cache.pods_listed)
		return;
	snprintf(dir, sizeof(dir), "%s/containers", a->cfg->state_dir);
	n = scandir(dir, &names, NULL, NULL);
	for (int i = 0; i < n; i++) {
		char path[4500], why[256], *text = NULL, pod[520] = "", *slash;
		struct km_cni_req *r;
		uint64_t cookie;
		struct stat st;
		km_envelope env = KMESH__IPC__ENVELOPE__INIT;
		Kmesh__Ipc__CniCall cc = KMESH__IPC__CNI_CALL__INIT;
		Kmesh__Ipc__Enroll en = KMESH__IPC__ENROLL__INIT;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] == '.' || stat(path, &st) != 0 ||
		    time(NULL) - st.st_mtime <= (time_t)a->cfg->gc_age_s ||
		    km_read_file(path, 4096, &text, why, sizeof(why)) < 0 ||
		    sscanf(text, "%" SCNu64 " %519s", &cookie, pod) != 2 || !(slash = strchr(pod, '/')))
			goto next;
		*slash = '\0';
		if (km_pod_cache_pod(&a->cache, pod, slash + 1))
			goto next;
		cc.command = KMESH__IPC__CNI_CALL__COMMAND__DEL;
		cc.container_id = names[i]->d_name;
		cc.pod_namespace = pod;
		cc.pod_name = slash + 1;
		en.netns_cookie = cookie;
		cc.enroll = &en;
		env.body_case = KMESH__IPC__ENVELOPE__BODY_CNI_CALL;
		env.cni_call = &cc;
		r = req_new(a, &env);
		if (r) { /* gone from the cache: confirmed by the API before anything is undone */
			char get[600];

			snprintf(get, sizeof(get), "/api/v1/namespaces/%s/pods/%s", pod, slash + 1);
			if (!km_kube_call(&a->gets, "GET", get, NULL, on_collect_checked, r))
				req_free(r);
		}
next:
		free(text);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/* How often to look for containers whose pod is gone: every half of --gc-age-seconds (a gone
 * pod is unenrolled within 1.5 times its age), at least every GC_EVERY_MS, at most every second. */
static uint64_t gc_every_ms(const struct km_cni_agent *a)
{
	uint64_t half = (uint64_t)a->cfg->gc_age_s * 500;

	return half < 1000 ? 1000 : half > GC_EVERY_MS ? GC_EVERY_MS : half;
}

static void on_tick(uv_timer_t *t)
{
	struct km_cni_agent *a = t->data;
	uint64_t now = uv_now(a->loop);

	/* calls whose wait is over: GET what the cache still lacks */
	for (struct km_cni_req *r = a->waiting, *next; r; r = next) {
		next = r->next;
		if (!r->fetching && now >= r->deadline_ms)
			try_decide(r);
	}
	annotate_pass(a);
	km_tunnel_feed_tick(&a->tunnel, now);
	if (now - a->last_reconcile_ms >= a->cfg->reconcile_ms) {
		a->last_reconcile_ms = now;
		reconcile_records(a);
	}
	if (now - a->last_gc_ms >= gc_every_ms(a)) {
		a->last_gc_ms = now;
		collect(a);
	}
}

/* The cache changed: waiting calls may be decided now. */
static void on_cache_change(void *arg)
{
	struct km_cni_agent *a = arg;

	for (struct km_cni_req *r = a->waiting, *next; r; r = next) {
		next = r->next;
		if (!r->fetching)
			try_decide(r);
	}
}

int km_cni_agent_start(struct km_cni_agent *a, uv_loop_t *loop,
		       const struct km_cni_agent_config *cfg)
{
	const struct km_ipc_server_ops ops = { .allowed = allowed, .on_request = on_request };
	const struct km_ipc_server_config scfg = {
		.path = cfg->socket_path,
		.mode = 0600,
		.gid = (gid_t)-1,
		.max_frame = MAX_FRAME,
		.name = "kmesh-cni-agent",
	};
	char err[512];
	int rc;

	memset(a, 0, sizeof(*a));
	a->loop = loop;
	a->cfg = cfg;
	if (km_cni_state_init(cfg->state_dir, err, sizeof(err)) != 0) {
		km_error("%s", err);
		return -1;
	}
	km_mw_calls_init(&a->mw, loop, cfg->map_writer_socket, (int)cfg->timeout_ms);
	km_tunnel_feed_init(&a->tunnel, loop, cfg->tunnel_socket, (int)cfg->timeout_ms,
			    cfg->reconcile_ms, &a->cache);
	km_tunnel_feed_seed(&a->tunnel, cfg->state_dir);
	km_kube_calls_init(&a->gets, loop, cfg->kubeconfig, cfg->timeout_ms);
	km_kube_calls_init(&a->patches, loop, cfg->kubeconfig, cfg->timeout_ms);
	if (km_pod_cache_start(&a->cache, loop, cfg->kubeconfig, cfg->node_name, cfg->resync_ms,
			       on_cache_change, a, err, sizeof(err)) != 0) {
		km_error("cannot watch this node's pods: %s", err);
		return -1;
	}
	rc = km_ipc_server_start(&a->srv, loop, &scfg, &ops, a);
	if (rc) {
		km_pod_cache_stop(&a->cache);
		return -1;
	}
	uv_timer_init(loop, &a->tick);
	a->tick.data = a;
	uv_timer_start(&a->tick, on_tick, TICK_MS, TICK_MS);
	a->started = 1;
	km_info("serving the CNI plugin at %s for node %s (cache wait %u ms)", cfg->socket_path,
		cfg->node_name, cfg->cache_wait_ms);
	return 0;
}

void km_cni_agent_stop(struct km_cni_agent *a)
{
	if (!a->started)
		return;
	a->started = 0;
	uv_close((uv_handle_t *)&a->tick, NULL);
	/* calls still waiting for the cache: an ADD is kept undecided for the next start */
	while (a->waiting) {
		struct km_cni_req *r = a->waiting;

		a->waiting = r->next;
		if (r->fetching)
			continue; /* its GET is cancelled or finishes below, and answers it */
		if (call_of(r)->command == KMESH__IPC__CNI_CALL__COMMAND__ADD)
			keep_for_later(r);
		answer(r, R(KUBE_UNAVAILABLE), 0, "the CNI agent is stopping");
	}
	km_ipc_server_stop(&a->srv, NULL);
	km_mw_calls_stop(&a->mw);
	km_tunnel_feed_stop(&a->tunnel);
	km_kube_calls_stop(&a->gets);
	km_kube_calls_stop(&a->patches);
	km_pod_cache_stop(&a->cache);
	while (a->annotations) {
		struct km_cni_annotation *n = a->annotations;

		a->annotations = n->next;
		free(n);
	}
}
