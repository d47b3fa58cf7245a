/* install.c — the installer's reconcile loop and uninstall (see install.h). */
#include "services/cni-plugin/install.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "services/cni-plugin/bundle.h"
#include "services/cni-plugin/conflist.h"
#include "shared/atomic_file.h"
#include "shared/kube/kubeconfig.h"
#include "shared/log.h"
#include "shared/signals.h"

#define KM_BINARY_MAX_BYTES (256u << 20)
#define KM_SA_FILE_MAX_BYTES (256u << 10)
#define KM_DEBOUNCE_MS 100
#define KM_DEBOUNCE_MAX_MS 500 /* a stream of events delays the check at most this long */
#define KUBECONFIG_NAME "kmesh-cni-kubeconfig"

struct installer {
	const struct km_cni_install_config *cfg;
	uv_loop_t *loop;
	uv_fs_event_t conf_watch, sa_watch;
	uv_timer_t debounce, resync;
	struct km_signals signals;
	int sa_watching, exit_code;
	uint64_t pending_since; /* uv_now of the first event not yet checked; 0: none */
	json_t *entry;
	char kubeconfig_path[4096];
	char waiting_for[4200]; /* the last "waiting" message, logged once */
};

/* Write path only when its content differs from data. Returns 1 written, 0 same, -1 error. */
static int write_if_changed(const char *path, const char *data, size_t len, mode_t mode,
			    size_t max)
{
	char why[512], *have = NULL;
	long n = km_read_file(path, max, &have, why, sizeof(why));
	struct stat st;
	int same = n >= 0 && (size_t)n == len && !memcmp(have, data, len) &&
		   stat(path, &st) == 0 && (st.st_mode & 07777) == mode;

	free(have);
	if (same)
		return 0;
	if (km_atomic_write(path, data, len, mode, (uid_t)-1, (gid_t)-1, 0, why, sizeof(why))) {
		km_error("%s", why);
		return -1;
	}
	return 1;
}

/* With cfg->bundle: this process's libraries and loader into BIN/kmesh-cni.d, and data (the
 * plugin's image, this program) pointed at that loader, so the plugin runs on a node without
 * them. The libraries go first: the binary never names a loader that is not there. */
static void bundle(struct installer *in, char *data, size_t len, int verify)
{
	char dir[4200], loader[4500], name[256], why[512];
	int n;

	snprintf(dir, sizeof(dir), "%s/" KM_CNI_BUNDLE_DIR, in->cfg->bin_dir);
	if (km_bundle_interp_name(data, len, name, sizeof(name), why, sizeof(why)) == 0 &&
	    (n = km_bundle_libs(dir, verify, why, sizeof(why))) >= 0 &&
	    (snprintf(loader, sizeof(loader), "%s/%s", dir, name),
	     km_bundle_set_interp(data, len, loader, why, sizeof(why)) == 0)) {
		if (verify)
			km_info("the plugin's %d shared objects are in %s: it runs on any node", n, dir);
		return;
	}
	km_warn("the plugin is installed without its libraries, so it runs only on a node that "
		"has them: %s", why);
}

/* first: at start, when the libraries are compared byte for byte (later only by size) */
static int install_binary(struct installer *in, int first)
{
	char dst[4200], why[512], *data;
	long n = km_read_file(in->cfg->plugin_binary, KM_BINARY_MAX_BYTES, &data, why, sizeof(why));
	int rc;

	if (n < 0) {
		km_error("plugin binary: %s", why);
		return -1;
	}
	if (in->cfg->bundle)
		bundle(in, data, (size_t)n, first);
	snprintf(dst, sizeof(dst), "%s/" KM_CNI_PLUGIN_TYPE, in->cfg->bin_dir);
	rc = write_if_changed(dst, data, (size_t)n, 0755, KM_BINARY_MAX_BYTES);
	free(data);
	if (rc > 0)
		km_info("installed the plugin binary %s", dst);
	return rc < 0 ? -1 : 0;
}

static int read_sa_file(const char *dir, const char *name, char **out)
{
	char path[4200], why[512];
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	n = km_read_file(path, KM_SA_FILE_MAX_BYTES, out, why, sizeof(why));
	if (n < 0) {
		km_error("service account: %s", why);
		return -1;
	}
	return (int)n;
}

static int install_kubeconfig(struct installer *in)
{
	char *token = NULL, *ca = NULL, *text = NULL, server[600];
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	int ca_len, rc = -1;

	if (in->cfg->kubeconfig)
		return 0;
	if (in->cfg->kube_server)
		snprintf(server, sizeof(server), "%s", in->cfg->kube_server);
	else if (host && port)
		snprintf(server, sizeof(server), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s",
			 host, port);
	else {
		km_error("no Kubernetes API address: set --kube-server, or run in a pod "
			 "(KUBERNETES_SERVICE_HOST/PORT)");
		return -1;
	}
	if (read_sa_file(in->cfg->sa_dir, "token", &token) <= 0 ||
	    (ca_len = read_sa_file(in->cfg->sa_dir, "ca.crt", &ca)) <= 0)
		goto out;
	for (size_t n = strlen(token); n > 0 && (token[n - 1] == '\n' || token[n - 1] == '\r');)
		token[--n] = '\0';
	text = km_kubeconfig_render(server, ca, (size_t)ca_len, token);
	if (!text)
		goto out;
	rc = write_if_changed(in->kubeconfig_path, text, strlen(text), 0600, KM_KUBECONFIG_MAX_BYTES);
	if (rc > 0)
		km_info("wrote the plugin's kubeconfig %s (server %s)", in->kubeconfig_path, server);
	rc = rc < 0 ? -1 : 0;
out:
	free(token);
	free(ca);
	free(text);
	return rc;
}

static void waiting(struct installer *in, const char *msg)
{
	if (strcmp(in->waiting_for, msg)) {
		snprintf(in->waiting_for, sizeof(in->waiting_for), "%s", msg);
		km_warn("%s", msg);
	}
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

struct unchanged_arg {
	const char *path;
	const struct stat *before;
};

static int unchanged_since_read(void *arg)
{
	const struct unchanged_arg *u = arg;
	struct stat now;

	return stat(u->path, &now) == 0 && same_file(&now, u->before);
}

/* Put our entry into (entry) or take it out of (NULL) one conflist file, only if the file did
 * not change from when it was read to just before the rename (the primary CNI may be writing
 * it). Returns 1 written, 0 nothing to do; -EAGAIN it is changing, try again; -EINVAL it is not
 * a conflist (or, to put our entry in, not a usable one); -EIO it cannot be read or written.
 * why says which. */
static int edit_conflist(const char *path, const json_t *entry, char *why, size_t whylen)
{
	struct stat before;
	struct unchanged_arg u = { path, &before };
	char *text = NULL, *out = NULL;
	json_t *list = NULL, *edited = NULL;
	long n;
	int rc = -EIO;

	if (stat(path, &before) != 0) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -EIO;
	}
	n = km_read_file(path, KM_CONFLIST_MAX_BYTES, &text, why, whylen);
	if (n < 0)
		goto out;
	rc = -EAGAIN;
	if ((long)before.st_size != n) {
		snprintf(why, whylen, "%s changed while it was read", path);
		goto out;
	}
	rc = -EINVAL;
	if (!(list = km_conflist_parse(text, (size_t)n, why, whylen)) ||
	    (entry && !km_conflist_usable(list, why, whylen)))
		goto out;
	edited = entry ? km_conflist_with_entry(list, entry) : km_conflist_without_entry(list);
	if (!edited) {
		rc = 0;
		goto out;
	}
	/* NULL when nothing valid is left (a list of our entry alone): not ours to fix */
	out = km_conflist_dump(edited);
	if (!out) {
		snprintf(why, whylen, "%s: the edited list would not be a conflist", path);
		goto out;
	}
	if (km_atomic_write_checked(path, out, strlen(out), before.st_mode & 07777, before.st_uid,
				    before.st_gid, 0, unchanged_since_read, &u, why, whylen) == 0)
		rc = 1;
	else
		rc = errno == EAGAIN ? -EAGAIN : -EIO;
out:
	free(text);
	free(out);
	json_decref(list);
	json_decref(edited);
	return rc;
}

/* Whether a file names our plugin type at all (files that do not are never touched). */
static int mentions_us(const char *path)
{
	char why[256], *text;
	int yes = km_read_file(path, KM_CONFLIST_MAX_BYTES, &text, why, sizeof(why)) >= 0 &&
		  strstr(text, "\"" KM_CNI_PLUGIN_TYPE "\"") != NULL;

	free(text);
	return yes;
}

/* Our entry out of every *.conflist in dir but keep (NULL: all), and out of named (a file that
 * may not end in .conflist). A file that is changing is retried for up to a second. Returns
 * how many files may still hold an entry of ours. */
static int remove_entries(const char *dir, const char *keep, const char *named)
{
	struct dirent **names;
	char path[4200], why[768];
	int n = scandir(dir, &names, NULL, alphasort), left = 0;

	if (n < 0) {
		km_error("cannot list %s: %s", dir, strerror(errno));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		size_t len = strlen(name);
		int r = 0;

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (name[0] != '.' && (!keep || strcmp(path, keep)) &&
		    ((len > 9 && !strcmp(name + len - 9, ".conflist")) || (named && !strcmp(name, named))) &&
		    mentions_us(path)) {
			for (int attempt = 0; attempt < 10; attempt++) {
				r = edit_conflist(path, NULL, why, sizeof(why));
				if (r != -EAGAIN)
					break;
				usleep(100 * 1000); /* shutdown path only; nothing else waits */
			}
			if (r > 0)
				km_info("removed kmesh-cni from %s", path);
			else if (r == -EINVAL) /* not a conflist a runtime could run */
				km_debug("left alone: %s", why);
			else if (r < 0) {
				km_error("kmesh-cni may still be in %s: %s", path, why);
				left++;
			}
		}
		free(names[i]);
	}
	free(names);
	return left;
}

static void install_entry(struct installer *in)
{
	char path[4200], earlier[256], why[768];
	int rc = km_conflist_find(in->cfg->conf_dir, in->cfg->conflist_name, path, sizeof(path),
				  earlier, sizeof(earlier), why, sizeof(why));

	if (rc == -ENOENT) {
		char msg[1200];

		snprintf(msg, sizeof(msg), "waiting for the primary CNI: no valid %s in %s yet%s%s",
			 in->cfg->conflist_name ? in->cfg->conflist_name : "*.conflist",
			 in->cfg->conf_dir, why[0] ? "; " : "", why);
		waiting(in, msg);
		return;
	}
	if (rc < 0) {
		waiting(in, why);
		return;
	}
	rc = edit_conflist(path, in->entry, why, sizeof(why));
	if (rc == -EAGAIN || rc == -EINVAL) {
		km_debug("conflist not edited now: %s", why); /* the next event tries again */
		return;
	}
	if (rc < 0) {
		waiting(in, why);
		return;
	}
	in->waiting_for[0] = '\0';
	/* an entry left in another list (chosen while this one was briefly invalid) goes */
	remove_entries(in->cfg->conf_dir, path, NULL);
	if (rc > 0) {
		km_info("kmesh-cni is the last plugin of %s", path);
		if (earlier[0])
			km_warn("%s/%s sorts before %s: a runtime loads that file instead, and pods "
				"are not enrolled; use a .conflist or name it with --conflist-name",
				in->cfg->conf_dir, earlier, path);
	}
}

/* A change in the watched dirs: the kubeconfig (the token, or the file itself) and the entry.
 * The binary (hundreds of KB to read and compare) is left to the periodic resync. */
static void on_debounce(uv_timer_t *t)
{
	struct installer *in = t->data;

	in->pending_since = 0;
	install_kubeconfig(in);
	install_entry(in);
}

static void on_resync(uv_timer_t *t)
{
	struct installer *in = t->data;

	install_binary(in, 0);
	install_kubeconfig(in);
	install_entry(in);
}

static void on_change(uv_fs_event_t *h, const char *name, int events, int status)
{
	struct installer *in = h->data;

	(void)events;
	if (status < 0) {
		km_warn("watch: %s", uv_strerror(status));
		return;
	}
	/* our own temporary files come and go too; the debounce folds them into one check */
	km_debug("change in %s: %s", h == &in->conf_watch ? in->cfg->conf_dir : in->cfg->sa_dir,
		 name ? name : "?");
	if (!in->pending_since)
		in->pending_since = uv_now(in->loop);
	if (uv_now(in->loop) - in->pending_since < KM_DEBOUNCE_MAX_MS)
		uv_timer_start(&in->debounce, on_debounce, KM_DEBOUNCE_MS, 0);
}

static void kubeconfig_path(const struct km_cni_install_config *cfg, char *out, size_t len)
{
	if (cfg->kubeconfig)
		snprintf(out, len, "%s", cfg->kubeconfig);
	else
		snprintf(out, len, "%s/" KUBECONFIG_NAME, cfg->conf_dir);
}

int km_cni_uninstall(const struct km_cni_install_config *cfg)
{
	char path[4200], why[512];
	int rc = 0;

	if (remove_entries(cfg->conf_dir, NULL, cfg->conflist_name) != 0) {
		/* a list naming a missing binary fails every pod's setup: keep it all */
		km_error("uninstall incomplete: an entry may remain, so the binary and the "
			 "kubeconfig stay; run kmesh-cni uninstall again");
		return 1;
	}
	if (!cfg->kubeconfig) {
		kubeconfig_path(cfg, path, sizeof(path));
		if (unlink(path) != 0 && errno != ENOENT) {
			km_error("cannot remove %s: %s", path, strerror(errno));
			rc = 1;
		}
	}
	snprintf(path, sizeof(path), "%s/" KM_CNI_PLUGIN_TYPE, cfg->bin_dir);
	if (unlink(path) != 0 && errno != ENOENT) {
		km_error("cannot remove %s: %s", path, strerror(errno));
		rc = 1;
	}
	snprintf(path, sizeof(path), "%s/" KM_CNI_BUNDLE_DIR, cfg->bin_dir);
	if (!rc && km_bundle_remove(path, why, sizeof(why)) != 0) { /* the binary first: it needs these */
		km_error("%s", why);
		rc = 1;
	}
	if (!rc)
		km_info("uninstalled: no kmesh-cni entry, binary, libraries or kubeconfig left");
	return rc;
}

static void on_close(uv_handle_t *h)
{
	(void)h;
}

static void on_shutdown(void *arg, int signum)
{
	struct installer *in = arg;

	km_info("signal %d: %s", signum,
		in->cfg->keep_on_exit ? "exiting; the entry stays (--keep-on-exit)" : "uninstalling");
	if (!in->cfg->keep_on_exit && km_cni_uninstall(in->cfg) != 0)
		in->exit_code = 1;
	uv_close((uv_handle_t *)&in->conf_watch, on_close);
	if (in->sa_watching)
		uv_close((uv_handle_t *)&in->sa_watch, on_close);
	uv_close((uv_handle_t *)&in->debounce, on_close);
	uv_close((uv_handle_t *)&in->resync, on_close);
	km_signals_close(&in->signals);
}

static json_t *make_entry(const struct km_cni_install_config *cfg, const char *kubeconfig)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i}", "type", KM_CNI_PLUGIN_TYPE,
			 "kubeconfig", kubeconfig, "mapWriterSocket", cfg->map_writer_socket,
			 "failPolicy", cfg->fail_policy, "stateDir", cfg->state_dir, "logLevel",
			 cfg->plugin_log_level, "timeoutMs", (int)cfg->plugin_timeout_ms);
}

int km_cni_install_run(const struct km_cni_install_config *cfg)
{
	static struct installer in;
	int rc;

	in.cfg = cfg;
	in.loop = uv_default_loop();
	kubeconfig_path(cfg, in.kubeconfig_path, sizeof(in.kubeconfig_path));
	in.entry = make_entry(cfg, in.kubeconfig_path);
	if (!in.entry)
		return 1;
	if (mkdir(cfg->conf_dir, 0755) != 0 && errno != EEXIST) {
		km_error("cannot create %s: %s", cfg->conf_dir, strerror(errno));
		return 1;
	}
	/* what a reconcile needs from outside must be there at start, or it is an error */
	if (install_binary(&in, 1) != 0 || install_kubeconfig(&in) != 0)
		return 1;
	uv_fs_event_init(in.loop, &in.conf_watch);
	in.conf_watch.data = &in;
	rc = uv_fs_event_start(&in.conf_watch, on_change, cfg->conf_dir, 0);
	if (rc) {
		km_error("cannot watch %s: %s", cfg->conf_dir, uv_strerror(rc));
		return 1;
	}
	if (!cfg->kubeconfig) {
		uv_fs_event_init(in.loop, &in.sa_watch);
		in.sa_watch.data = &in;
		in.sa_watching = uv_fs_event_start(&in.sa_watch, on_change, cfg->sa_dir, 0) == 0;
		if (!in.sa_watching) {
			km_warn("cannot watch %s; token changes are seen by the periodic resync",
				cfg->sa_dir);
			uv_close((uv_handle_t *)&in.sa_watch, NULL);
		}
	}
	uv_timer_init(in.loop, &in.debounce);
	in.debounce.data = &in;
	uv_timer_init(in.loop, &in.resync);
	in.resync.data = &in;
	uv_timer_start(&in.resync, on_resync, (uint64_t)cfg->resync_seconds * 1000,
		       (uint64_t)cfg->resync_seconds * 1000);
	km_signals_init(in.loop, &in.signals, on_shutdown, &in);
	install_entry(&in);
	km_info("watching %s (resync every %u s)", cfg->conf_dir, cfg->resync_seconds);
	uv_run(in.loop, UV_RUN_DEFAULT);
	uv_loop_close(in.loop);
	json_decref(in.entry);
	return in.exit_code;
}
