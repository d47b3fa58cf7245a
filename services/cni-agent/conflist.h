/* conflist.h — the CNI configuration list kmesh-cni chains itself into: which file (the one
 * named, or the first *.conflist by name we may chain into), what a conflist is and when it is
 * usable, and the two edits: our entry last in "plugins", or no entry of ours. Pure functions on jansson trees, so the
 * installer's file handling stays separate and the parser can be fuzzed. */
#ifndef KM_CNI_CONFLIST_H
#define KM_CNI_CONFLIST_H

#include <jansson.h>
#include <stddef.h>

#define KM_CNI_PLUGIN_TYPE "kmesh-cni"
#define KM_CONFLIST_MAX_BYTES (1u << 20)

/* A conflist: a JSON object with a non-empty "plugins" list of objects with a string "type";
 * or NULL with err filled. Any such list may have our entry removed. */
json_t *km_conflist_parse(const char *text, size_t len, char *err, size_t errlen);
/* Whether we may chain into it: some plugin is not ours (we only run after a primary), and its
 * cniVersion, if given, is one kmesh-cni supports (the runtime hands every plugin the list's
 * version). 0 with err filled when not. */
int km_conflist_usable(const json_t *conflist, char *err, size_t errlen);
/* A copy of conflist with entry as the last plugin and no other kmesh-cni entry; NULL when
 * conflist already is so (nothing to write). */
json_t *km_conflist_with_entry(const json_t *conflist, const json_t *entry);
/* A copy without any kmesh-cni entry; NULL when there is none. */
json_t *km_conflist_without_entry(const json_t *conflist);
/* The text written for a conflist (2-space indent, key order kept, trailing newline); NULL if
 * it would not parse back as a valid conflist. */
char *km_conflist_dump(const json_t *conflist);

/* The file to edit: dir/named when named is given (it must be usable), else the first usable
 * *.conflist in dir by name. Returns 0 with path filled, -ENOENT when there is none yet, or
 * -1 with err filled; with -ENOENT, err says why the first *.conflist (if any) was not taken.
 * *earlier_conf is set to the name of a *.conf or *.json file that sorts
 * before it (a runtime would use that file instead; "" if none). */
int km_conflist_find(const char *dir, const char *named, char *path, size_t pathlen,
		     char *earlier_conf, size_t earlier_len, char *err, size_t errlen);

#endif
