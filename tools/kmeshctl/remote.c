/* remote.c — kmeshctl on other nodes' kmesh pods (remote.h): the pods from the API, the command
 * through `kubectl exec`, the answers merged (remote_merge.c). */
#include "tools/kmeshctl/remote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shared/grow.h"
#include "shared/kube_name.h"
#include "tools/kmeshctl/kube.h"

#define LABEL_SELECTOR "app.kubernetes.io%2Fname%3Dkmesh"
#define STDERR_MAX 65536

extern char **environ;

/* One node's kmesh pod, and its exec. */
struct target {
	char *node, *pod;
	const char *skip;   /* why it is not run (a pod not running), or NULL */
	pid_t pid;          /* 0: not started or done */
	int out_fd, err_fd; /* -1: closed */
	char *out, *err;
	size_t out_len, out_cap, err_len, err_cap;
	int status;         /* wait status once done */
	int timed_out, too_big;
	struct timespec started;
};

int km_remote_wanted(const struct km_remote *r)
{
	return r->all_nodes || r->n_nodes > 0;
}

int km_remote_parse_node(const char *arg, void *target, char *err, size_t errlen)
{
	struct km_remote *r = target;
	const char *p = arg;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == 0 || n > 253) {
			snprintf(err, errlen, "'%s' is not a node name (or a comma-separated list)", arg);
			return -1;
		}
		if (r->n_nodes == KM_REMOTE_NODES_MAX) {
			snprintf(err, errlen, "more than %d nodes named; use --all-nodes",
				 KM_REMOTE_NODES_MAX);
			return -1;
		}
		if (!(r->nodes[r->n_nodes] = strndup(p, n))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (!km_kube_valid_name(r->nodes[r->n_nodes])) { /* it goes into a query as is */
			snprintf(err, errlen, "'%s' is not a node name (a DNS subdomain)",
				 r->nodes[r->n_nodes]);
			free((char *)r->nodes[r->n_nodes]);
			return -1;
		}
		r->n_nodes++;
		p += n + (p[n] == ',');
	}
	return 0;
}

static int by_node(const void *a, const void *b)
{
	const struct target *x = a, *y = b;
	int c = strcmp(x->node, y->node);

	return c ? c : strcmp(x->pod, y->pod);
}

/* The kmesh pods: every one (all nodes), or those on the named nodes. Returns how many (each
 * named node that has none is said on stderr and counted in *missing), or -1. */
static long find_pods(const struct km_ctl *ctl, const struct km_remote *r, struct target **out,
		      size_t *missing)
{
	struct km_kube_client c;
	struct target *t = NULL;
	size_t n = 0, cap = 0;
	char path[1024], err[1024];
	int failed = 0;
	size_t asks = r->all_nodes ? 1 : r->n_nodes;

	*missing = 0;
	if (km_ctl_kube_open(ctl, &c) != 0)
		return -1;
	for (size_t q = 0; q < asks && !failed; q++) {
		json_t *list = NULL, *items, *pod;
		size_t i, before = n;
		int code;

		if (r->all_nodes)
			snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?labelSelector=%s",
				 r->namespace, LABEL_SELECTOR);
		else
			snprintf(path, sizeof(path),
				 "/api/v1/namespaces/%s/pods?labelSelector=%s&fieldSelector=spec.nodeName%%3D%s",
				 r->namespace, LABEL_SELECTOR, r->nodes[q]);
		code = km_ctl_kube_call(&c, "GET", path, NULL, &list, err, sizeof(err));
		if (code != 200) {
			fprintf(stderr, "kmeshctl: cannot list the kmesh pods in %s: %s\n", r->namespace,
				err);
			failed = 1;
			break;
		}
		items = json_object_get(list, "items");
		json_array_foreach(items, i, pod) {
			const char *name = json_string_value(json_object_get(
				json_object_get(pod, "metadata"), "name"));
			const char *node = json_string_value(json_object_get(
				json_object_get(pod, "spec"), "nodeName"));
			const char *phase = json_string_value(json_object_get(
				json_object_get(pod, "status"), "phase"));

			if (!name || !node)
				continue; /* not scheduled yet */
			if (km_grow((void **)&t, &cap, n + 1, sizeof(*t)) != 0) {
				failed = 1;
				break;
			}
			memset(&t[n], 0, sizeof(t[n]));
			t[n].out_fd = t[n].err_fd = -1;
			if (!(t[n].node = strdup(node)) || !(t[n].pod = strdup(name))) {
				free(t[n].node);
				failed = 1;
				break;
			}
			if (phase && strcmp(phase, "Running"))
				t[n].skip = "its kmesh pod is not running";
			n++;
		}
		json_decref(list);
		if (!r->all_nodes && n == before) {
			fprintf(stderr, "kmeshctl: no kmesh pod on node %s (namespace %s, label "
					"app.kubernetes.io/name=kmesh)\n", r->nodes[q], r->namespace);
			(*missing)++;
		}
	}
	km_kube_close(&c);
	if (failed) {
		for (size_t i = 0; i < n; i++) {
			free(t[i].node);
			free(t[i].pod);
		}
		free(t);
		return -1;
	}
	if (n)
		qsort(t, n, sizeof(*t), by_node);
	*out = t;
	return (long)n;
}

/* kubectl [--kubeconfig K] exec -n NS POD -c map-writer -- kmeshctl [-o F] [--timeout-ms N]
 * CMD ARGS... (NULL-terminated; the strings are borrowed). */
static char **exec_argv(const struct km_ctl *ctl, const struct km_remote *r, const char *pod,
			const char *format, char *timeout, const char *cmd, int argc, char **argv)
{
	char **v = calloc((size_t)argc + 20, sizeof(*v));
	int i = 0;

	if (!v)
		return NULL;
	v[i++] = (char *)r->kubectl;
	if (ctl->kubeconfig && *ctl->kubeconfig) {
		v[i++] = "--kubeconfig";
		v[i++] = (char *)ctl->kubeconfig;
	}
	v[i++] = "exec";
	v[i++] = "-n";
	v[i++] = (char *)r->namespace;
	v[i++] = (char *)pod;
	v[i++] = "-c";
	v[i++] = KM_REMOTE_CONTAINER;
	v[i++] = "--";
	v[i++] = "kmeshctl";
	if (format) {
		v[i++] = "-o";
		v[i++] = (char *)format;
	}
	v[i++] = "--timeout-ms";
	v[i++] = timeout;
	v[i++] = (char *)cmd;
	for (int a = 0; a < argc; a++)
		v[i++] = argv[a];
	return v;
}

/* Start one exec, its stdout and stderr to pipes (both NULL: inherited). Returns 0 or -errno. */
static int spawn(char **args, pid_t *pid, int *out_fd, int *err_fd)
{
	posix_spawn_file_actions_t fa;
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, rc;

	if (out_fd && (pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0)) {
		rc = -errno;
		goto fail;
	}
	posix_spawn_file_actions_init(&fa);
	if (out_fd) {
		posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
		posix_spawn_file_actions_adddup2(&fa, errp[1], STDERR_FILENO);
	}
	rc = -posix_spawnp(pid, args[0], &fa, NULL, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		goto fail;
	if (out_fd) {
		close(out[1]);
		close(errp[1]);
		*out_fd = out[0];
		*err_fd = errp[0];
	}
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	return rc;
}

static void say_cannot_run(const struct km_remote *r, int rc)
{
	fprintf(stderr, "kmeshctl: cannot run %s: %s%s\n", r->kubectl, strerror(-rc),
		rc == -ENOENT ? " (install kubectl, or give --kubectl PATH)" : "");
}

/* One node: the command as it prints there, its exit code ours. */
static int run_one(const struct km_ctl *ctl, const struct km_remote *r, const struct target *t,
		   const char *cmd, int argc, char **argv)
{
	const char *formats[] = { "table", "json", "yaml" };
	char timeout[24], **args;
	pid_t pid;
	int rc, status;

	if (t->skip) {
		fprintf(stderr, "kmeshctl: node %s: %s (pod %s)\n", t->node, t->skip, t->pod);
		return 1;
	}
	snprintf(timeout, sizeof(timeout), "%d", ctl->timeout_ms);
	args = exec_argv(ctl, r, t->pod, r->format_given ? formats[ctl->format] : NULL, timeout, cmd,
			 argc, argv);
	if (!args)
		return 1;
	rc = spawn(args, &pid, NULL, NULL);
	free(args);
	if (rc) {
		say_cannot_run(r, rc);
		return 1;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* Read what is there into buf (bounded); returns 0 at EOF (fd closed), 1 if more may come. */
static int drain(int *fd, char **buf, size_t *len, size_t *cap, size_t max, int *too_big)
{
	char chunk[65536];
	ssize_t n = read(*fd, chunk, sizeof(chunk));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	if (*len + (size_t)n > max) {
		*too_big = 1;
		return 1; /* read on and drop, so the exec is not blocked */
	}
	if (km_grow((void **)buf, cap, *len + (size_t)n + 1, 1) != 0) {
		*too_big = 1;
		return 1;
	}
	memcpy(*buf + *len, chunk, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = '\0';
	return 1;
}

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Run every target's exec, KM_REMOTE_PARALLEL at once, to the end. */
static void run_all(const struct km_ctl *ctl, const struct km_remote *r, struct target *t, size_t n,
		    const char *cmd, int argc, char **argv)
{
	size_t next = 0, running = 0;
	char timeout[24];

	snprintf(timeout, sizeof(timeout), "%d", ctl->timeout_ms);
	while (next < n || running) {
		struct pollfd pfd[2 * KM_REMOTE_PARALLEL];
		struct target *owner[2 * KM_REMOTE_PARALLEL];
		int which[2 * KM_REMOTE_PARALLEL];
		nfds_t np = 0;

		while (next < n && running < KM_REMOTE_PARALLEL) {
			struct target *x = &t[next++];
			char **args;
			int rc;

			if (x->skip)
				continue;
			args = exec_argv(ctl, r, x->pod, "json", timeout, cmd, argc, argv);
			rc = args ? spawn(args, &x->pid, &x->out_fd, &x->err_fd) : -ENOMEM;
			free(args);
			if (rc) {
				say_cannot_run(r, rc);
				x->skip = "kubectl did not start";
				continue;
			}
			clock_gettime(CLOCK_MONOTONIC, &x->started);
			running++;
		}
		for (size_t i = 0; i < next; i++) {
			struct target *x = &t[i];

			if (!x->pid)
				continue;
			if (!x->timed_out && since(&x->started) > KM_REMOTE_TIMEOUT_S) {
				kill(x->pid, SIGKILL);
				x->timed_out = 1;
			}
			if (x->out_fd >= 0) {
				pfd[np] = (struct pollfd){ .fd = x->out_fd, .events = POLLIN };
				owner[np] = x;
				which[np++] = 1;
			}
			if (x->err_fd >= 0) {
				pfd[np] = (struct pollfd){ .fd = x->err_fd, .events = POLLIN };
				owner[np] = x;
				which[np++] = 2;
			}
			if (x->out_fd < 0 && x->err_fd < 0) { /* both closed: reap it */
				if (waitpid(x->pid, &x->status, 0) == x->pid || errno != EINTR) {
					x->pid = 0;
					running--;
				}
			}
		}
		if (!np)
			continue;
		if (poll(pfd, np, 1000) < 0 && errno != EINTR)
			break;
		for (nfds_t i = 0; i < np; i++) {
			struct target *x = owner[i];

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (which[i] == 1)
				drain(&x->out_fd, &x->out, &x->out_len, &x->out_cap, KM_REMOTE_OUTPUT_MAX,
				      &x->too_big);
			else
				drain(&x->err_fd, &x->err, &x->err_len, &x->err_cap, STDERR_MAX,
				      &x->too_big);
		}
	}
}

/* The last line of text (a command's error), trimmed. */
static const char *last_line(char *text)
{
	size_t n;
	char *nl;

	if (!text)
		return "";
	n = strlen(text);
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		text[--n] = '\0';
	nl = strrchr(text, '\n');
	return nl ? nl + 1 : text;
}

/* A node's answer as JSON, or NULL with the reason said on stderr. */
static json_t *answer_of(struct target *x)
{
	json_error_t jerr;
	json_t *doc;

	if (x->skip) {
		fprintf(stderr, "kmeshctl: node %s: %s (pod %s)\n", x->node, x->skip, x->pod);
		return NULL;
	}
	if (x->timed_out || x->too_big) {
		fprintf(stderr, "kmeshctl: node %s: %s (pod %s)\n", x->node,
			x->timed_out ? "no answer within 60 s" : "its answer is over 64 MiB", x->pod);
		return NULL;
	}
	if (!WIFEXITED(x->status) || WEXITSTATUS(x->status)) {
		const char *why = last_line(x->err);

		fprintf(stderr, "kmeshctl: node %s: %s (pod %s, exit %d)\n", x->node,
			*why ? why : "failed", x->pod,
			WIFEXITED(x->status) ? WEXITSTATUS(x->status) : -1);
		if (!x->out_len)
			return NULL;
		/* a command that printed its rows and failed for one process: keep the rows */
	}
	doc = x->out ? json_loads(x->out, 0, &jerr) : NULL;
	if (!doc)
		fprintf(stderr, "kmeshctl: node %s: its answer is not JSON (pod %s): %s\n", x->node,
			x->pod, x->out ? jerr.text : "empty");
	return doc;
}

int km_remote_run(const struct km_ctl *ctl, const struct km_remote *r, const char *cmd, int argc,
		  char **argv)
{
	struct target *t = NULL;
	size_t missing, failed = 0;
	long n = find_pods(ctl, r, &t, &missing);
	int rc;

	if (n < 0)
		return 1;
	if (n == 0 && r->all_nodes) {
		fprintf(stderr, "kmeshctl: no kmesh pod in %s (label app.kubernetes.io/name=kmesh): "
				"is the chart installed there? (--kmesh-namespace)\n", r->namespace);
		return 1;
	}
	if (n == 1 && !r->all_nodes && r->n_nodes == 1) {
		rc = run_one(ctl, r, &t[0], cmd, argc, argv);
	} else {
		const char **nodes = calloc((size_t)n + 1, sizeof(*nodes));
		json_t **docs = calloc((size_t)n + 1, sizeof(*docs));
		json_t *merged;

		if (!nodes || !docs) {
			free(nodes);
			free(docs);
			rc = 1;
			goto out;
		}
		run_all(ctl, r, t, (size_t)n, cmd, argc, argv);
		for (long i = 0; i < n; i++) {
			nodes[i] = t[i].node;
			docs[i] = answer_of(&t[i]);
			failed += !docs[i] || !WIFEXITED(t[i].status) || WEXITSTATUS(t[i].status);
		}
		merged = km_remote_merge(nodes, (json_t *const *)docs, (size_t)n);
		if (n > 0)
			km_out_print(stdout, merged, ctl->format);
		json_decref(merged);
		for (long i = 0; i < n; i++)
			json_decref(docs[i]);
		free(nodes);
		free(docs);
		rc = failed || missing ? 1 : 0;
	}
out:
	for (long i = 0; i < n; i++) {
		free(t[i].node);
		free(t[i].pod);
		free(t[i].out);
		free(t[i].err);
	}
	free(t);
	return rc;
}
