/* install.c — the installer's reconcile loop and uninstall (see install.h). */
#include "services/cni-agent/install.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "services/cni-agent/conflist.h"
#include "shared/atomic_file.h"
#include "shared/log.h"

#define KM_BINARY_MAX_BYTES (256u << 20)
#define KM_DEBOUNCE_MS 100
#define KM_DEBOUNCE_MAX_MS 500 /* a stream of events delays the check at most this long */
/* What earlier versions installed beside the plugin and this one does not: the plugin's
 * kubeconfig (the agent asks the API, the plugin no longer does) and its bundled libraries (the
 * plugin is linked statically now). Removed at start and by uninstall. */
#define LEGACY_KUBECONFIG "kmesh-cni-kubeconfig"
#define LEGACY_LIB_DIR "kmesh-cni.d"

#define installer km_cni_installer

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

static int install_binary(struct installer *in)
{
	char dst[4200], why[512], *data;
	long n = km_read_file(in->cfg->plugin_binary, KM_BINARY_MAX_BYTES, &data, why, sizeof(why));
	int rc;

	if (n < 0) {
		km_error("plugin binary: %s", why);
		return -1;
	}
	snprintf(dst, sizeof(dst), "%s/" KM_CNI_PLUGIN_TYPE, in->cfg->bin_dir);
	rc = write_if_changed(dst, data, (size_t)n, 0755, KM_BINARY_MAX_BYTES);
	free(data);
	if (rc > 0)
		km_info("installed the plugin binary %s", dst);
	return rc < 0 ? -1 : 0;
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

/* A change in the conf dir: the entry. The binary (hundreds of KB to read and compare) is left
 * to the periodic resync. */
static void on_debounce(uv_timer_t *t)
{
	struct installer *in = t->data;

	in->pending_since = 0;
	install_entry(in);
}

static void on_resync(uv_timer_t *t)
{
	struct installer *in = t->data;

	install_binary(in);
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
	km_debug("change in %s: %s", in->cfg->conf_dir, name ? name : "?");
	if (!in->pending_since)
		in->pending_since = uv_now(in->loop);
	if (uv_now(in->loop) - in->pending_since < KM_DEBOUNCE_MAX_MS)
		uv_timer_start(&in->debounce, on_debounce, KM_DEBOUNCE_MS, 0);
}

/* Remove what earlier versions installed and this one does not. Returns 0 or 1. */
static int remove_legacy(const struct km_cni_install_config *cfg)
{
	char path[4200], lib[4500];
	struct dirent **names;
	int n, rc = 0;

	snprintf(path, sizeof(path), "%s/" LEGACY_KUBECONFIG, cfg->conf_dir);
	if (unlink(path) == 0)
		km_info("removed %s: the plugin no longer reads the API", path);
	else if (errno != ENOENT)
		rc = 1;
	snprintf(path, sizeof(path), "%s/" LEGACY_LIB_DIR, cfg->bin_dir);
	n = scandir(path, &names, NULL, NULL);
	for (int i = 0; i < n; i++) {
		snprintf(lib, sizeof(lib), "%s/%s", path, names[i]->d_name);
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, "..") &&
		    unlink(lib) != 0)
			rc = 1;
		free(names[i]);
	}
	if (n >= 0) {
		free(names);
		if (rmdir(path) == 0)
			km_info("removed %s: the plugin is linked statically", path);
		else
			rc = 1;
	}
	if (rc)
		km_error("cannot remove what an earlier version installed (%s): %s", path,
			 strerror(errno));
	return rc;
}

int km_cni_uninstall(const struct km_cni_install_config *cfg)
{
	char path[4200];
	int rc = 0;

	if (remove_entries(cfg->conf_dir, NULL, cfg->conflist_name) != 0) {
		/* a list naming a missing binary fails every pod's setup: keep it */
		km_error("uninstall incomplete: an entry may remain, so the binary stays; run "
			 "kmesh-cni-agent uninstall again");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/" KM_CNI_PLUGIN_TYPE, cfg->bin_dir);
	if (unlink(path) != 0 && errno != ENOENT) {
		km_error("cannot remove %s: %s", path, strerror(errno));
		rc = 1;
	}
	if (remove_legacy(cfg) != 0)
		rc = 1;
	if (!rc)
		km_info("uninstalled: no kmesh-cni entry or binary left");
	return rc;
}

static void on_close(uv_handle_t *h)
{
	(void)h;
}

int km_cni_install_stop(struct installer *in)
{
	int rc = 0;

	if (!in->started)
		return 0;
	in->started = 0;
	km_info("%s", in->cfg->keep_on_exit ? "exiting; the entry stays (--keep-on-exit)"
					    : "uninstalling");
	if (!in->cfg->keep_on_exit && km_cni_uninstall(in->cfg) != 0)
		rc = 1;
	uv_close((uv_handle_t *)&in->conf_watch, on_close);
	uv_close((uv_handle_t *)&in->debounce, on_close);
	uv_close((uv_handle_t *)&in->resync, on_close);
	json_decref(in->entry);
	in->entry = NULL;
	return rc;
}

static json_t *make_entry(const struct km_cni_install_config *cfg)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "type", KM_CNI_PLUGIN_TYPE,
			 "agentSocket", cfg->agent_socket, "failPolicy", cfg->fail_policy,
			 "stateDir", cfg->state_dir, "logLevel", cfg->plugin_log_level,
			 "timeoutMs", (int)cfg->plugin_timeout_ms);
}

int km_cni_install_start(struct installer *in, uv_loop_t *loop,
			 const struct km_cni_install_config *cfg)
{
	int rc;

	memset(in, 0, sizeof(*in));
	in->cfg = cfg;
	in->loop = loop;
	in->entry = make_entry(cfg);
	if (!in->entry)
		return -1;
	if (mkdir(cfg->conf_dir, 0755) != 0 && errno != EEXIST) {
		km_error("cannot create %s: %s", cfg->conf_dir, strerror(errno));
		return -1;
	}
	/* what a reconcile needs from outside must be there at start, or it is an error */
	if (install_binary(in) != 0)
		return -1;
	remove_legacy(cfg);
	uv_fs_event_init(loop, &in->conf_watch);
	in->conf_watch.data = in;
	rc = uv_fs_event_start(&in->conf_watch, on_change, cfg->conf_dir, 0);
	if (rc) {
		km_error("cannot watch %s: %s", cfg->conf_dir, uv_strerror(rc));
		uv_close((uv_handle_t *)&in->conf_watch, NULL);
		return -1;
	}
	uv_timer_init(loop, &in->debounce);
	in->debounce.data = in;
	uv_timer_init(loop, &in->resync);
	in->resync.data = in;
	uv_timer_start(&in->resync, on_resync, (uint64_t)cfg->resync_seconds * 1000,
		       (uint64_t)cfg->resync_seconds * 1000);
	in->started = 1;
	install_entry(in);
	km_info("watching %s (resync every %u s)", cfg->conf_dir, cfg->resync_seconds);
	return 0;
}
