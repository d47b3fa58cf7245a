/* remote_merge.c — several nodes' answers as one document (remote.h): the shapes output.h prints
 * as tables, each row led by the node that answered it:
 *   - an array: its rows, each {node, ...row} (a row that is no object: {node, value});
 *   - an object of arrays (one table per key): the same per key;
 *   - any other object: one row {node, ...its fields}, so the nodes' objects make one table.
 * Nodes that answer in different shapes (different versions) still lose nothing: a row each. */
#include "tools/kmeshctl/remote.h"

#include <string.h>

/* {node, ...fields of row} (or {node, value: row}), a new reference. */
static json_t *led_by(const char *node, json_t *row)
{
	json_t *out = json_object();
	const char *k;
	json_t *v;

	if (!out)
		return NULL;
	json_object_set_new(out, "node", json_string(node));
	if (json_is_object(row)) {
		json_object_foreach(row, k, v)
			if (strcmp(k, "node"))
				json_object_set(out, k, v);
	} else {
		json_object_set(out, "value", row);
	}
	return out;
}

static void append_rows(json_t *into, const char *node, json_t *rows)
{
	size_t i;
	json_t *row;

	json_array_foreach(rows, i, row)
		json_array_append_new(into, led_by(node, row));
}

/* An object whose every value is an array (and at least one). */
static int is_tables(json_t *doc)
{
	const char *k;
	json_t *v;

	if (!json_is_object(doc) || !json_object_size(doc))
		return 0;
	json_object_foreach(doc, k, v)
		if (!json_is_array(v))
			return 0;
	return 1;
}

json_t *km_remote_merge(const char *const *nodes, json_t *const *docs, size_t n)
{
	json_t *merged = NULL;

	for (size_t i = 0; i < n; i++) {
		json_t *doc = docs[i];

		if (!doc)
			continue; /* that node failed: named on stderr */
		if (is_tables(doc) && (!merged || json_is_object(merged))) {
			const char *k;
			json_t *v;

			if (!merged)
				merged = json_object();
			json_object_foreach(doc, k, v) {
				json_t *table = json_object_get(merged, k);

				if (!table) {
					table = json_array();
					json_object_set_new(merged, k, table);
				}
				append_rows(table, nodes[i], v);
			}
			continue;
		}
		if (!merged)
			merged = json_array();
		if (json_is_object(merged)) { /* nodes answered in different shapes (versions) */
			json_t *other = json_object_get(merged, "other");

			if (!other) {
				other = json_array();
				json_object_set_new(merged, "other", other);
			}
			json_array_append_new(other, led_by(nodes[i], doc));
		} else if (json_is_array(doc))
			append_rows(merged, nodes[i], doc);
		else
			json_array_append_new(merged, led_by(nodes[i], doc));
	}
	return merged ? merged : json_array();
}
