/* conflist.c — choosing and editing the CNI configuration list (see conflist.h). */
#include "services/cni-agent/conflist.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/cni-plugin/cni_output.h"
#include "shared/atomic_file.h"
#include "shared/errbuf.h"

static int is_ours(const json_t *plugin)
{
	const char *t = json_string_value(json_object_get(plugin, "type"));

	return t && !strcmp(t, KM_CNI_PLUGIN_TYPE);
}

json_t *km_conflist_parse(const char *text, size_t len, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root, *plugins, *p;
	size_t i;

	if (len == 0) {
		km_errf(err, errlen, "empty file");
		return NULL;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		km_errf(err, errlen, "not JSON: %s (line %d)", jerr.text, jerr.line);
		return NULL;
	}
	plugins = json_object_get(root, "plugins");
	if (!json_is_object(root) || !json_is_array(plugins) || json_array_size(plugins) == 0) {
		km_errf(err, errlen, "not a conflist: no non-empty \"plugins\" list");
		json_decref(root);
		return NULL;
	}
	json_array_foreach(plugins, i, p) {
		if (!json_is_string(json_object_get(p, "type"))) {
			km_errf(err, errlen, "plugins[%zu] has no \"type\"", i);
			json_decref(root);
			return NULL;
		}
	}
	return root;
}

int km_conflist_usable(const json_t *conflist, char *err, size_t errlen)
{
	const char *version = json_string_value(json_object_get(conflist, "cniVersion"));
	json_t *p;
	size_t i, primary = 0;

	if (version && !km_cni_version_supported(version)) {
		/* the runtime hands every plugin the list's version: ours would refuse each ADD */
		km_errf(err, errlen, "cniVersion %.32s is not one kmesh-cni supports (0.3.0, 0.3.1, "
			"0.4.0, 1.0.0)", version);
		return 0;
	}
	json_array_foreach(json_object_get(conflist, "plugins"), i, p)
		primary += !is_ours(p);
	if (!primary) {
		/* kmesh-cni only chains after a primary plugin */
		km_errf(err, errlen, "no plugin other than " KM_CNI_PLUGIN_TYPE);
		return 0;
	}
	return 1;
}

static size_t count_ours(const json_t *conflist)
{
	size_t i, n = 0;
	json_t *p;

	json_array_foreach(json_object_get(conflist, "plugins"), i, p)
		n += is_ours(p);
	return n;
}

/* A deep copy of conflist whose plugins are the primary's only. */
static json_t *copy_without_ours(const json_t *conflist)
{
	json_t *copy = json_deep_copy(conflist), *list = json_array(), *p;
	size_t i;

	json_array_foreach(json_object_get(copy, "plugins"), i, p)
		if (!is_ours(p))
			json_array_append(list, p);
	json_object_set_new(copy, "plugins", list);
	return copy;
}

json_t *km_conflist_with_entry(const json_t *conflist, const json_t *entry)
{
	const json_t *plugins = json_object_get(conflist, "plugins");
	json_t *copy;

	if (count_ours(conflist) == 1 &&
	    json_equal(json_array_get(plugins, json_array_size(plugins) - 1), (json_t *)entry))
		return NULL;
	copy = copy_without_ours(conflist);
	json_array_append_new(json_object_get(copy, "plugins"), json_deep_copy(entry));
	return copy;
}

json_t *km_conflist_without_entry(const json_t *conflist)
{
	return count_ours(conflist) ? copy_without_ours(conflist) : NULL;
}

char *km_conflist_dump(const json_t *conflist)
{
	char *text = json_dumps(conflist, JSON_INDENT(2) | JSON_PRESERVE_ORDER), *out;
	char why[128];
	json_t *back;
	size_t n;

	if (!text)
		return NULL;
	n = strlen(text);
	back = km_conflist_parse(text, n, why, sizeof(why));
	if (!back) {
		free(text);
		return NULL;
	}
	json_decref(back);
	out = realloc(text, n + 2);
	if (!out) {
		free(text);
		return NULL;
	}
	out[n] = '\n';
	out[n + 1] = '\0';
	return out;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int valid_file(const char *path, char *why, size_t whylen)
{
	char *text;
	long n = km_read_file(path, KM_CONFLIST_MAX_BYTES, &text, why, whylen);
	json_t *c = n >= 0 ? km_conflist_parse(text, (size_t)n, why, whylen) : NULL;
	int ok = c && km_conflist_usable(c, why, whylen);

	free(text);
	json_decref(c);
	return ok;
}

int km_conflist_find(const char *dir, const char *named, char *path, size_t pathlen,
		     char *earlier_conf, size_t earlier_len, char *err, size_t errlen)
{
	struct dirent **names;
	char why[300];
	int n, rc = -ENOENT;

	earlier_conf[0] = '\0';
	err[0] = '\0';
	if (named) {
		snprintf(path, pathlen, "%s/%s", dir, named);
		if (valid_file(path, why, sizeof(why)))
			return 0;
		km_errf(err, errlen, "%s: %s", named, why);
		return -ENOENT;
	}
	n = scandir(dir, &names, NULL, by_name);
	if (n < 0)
		return km_errf(err, errlen, "cannot list %s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;

		if (rc == -ENOENT && name[0] != '.' &&
		    (has_suffix(name, ".conf") || has_suffix(name, ".json")) && !earlier_conf[0])
			snprintf(earlier_conf, earlier_len, "%s", name);
		if (rc == -ENOENT && name[0] != '.' && has_suffix(name, ".conflist")) {
			snprintf(path, pathlen, "%s/%s", dir, name);
			if (valid_file(path, why, sizeof(why)))
				rc = 0;
			else if (!err[0])
				km_errf(err, errlen, "%s: %s", name, why);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}
