/* output.h — kmeshctl's one writer: every command builds a JSON value and this prints it as
 * indented JSON, as YAML, or as a table for people.
 *   - An array of objects is one table: a column per key, in the order keys first appear,
 *     headed by the key in capitals; a nested value shows as compact JSON.
 *   - An object of such arrays is one table per key, each under its name.
 *   - Any other object is a two-column table of keys and values. */
#ifndef KM_KMESHCTL_OUTPUT_H
#define KM_KMESHCTL_OUTPUT_H

#include <stdio.h>

#include <jansson.h>

enum km_out_format { KM_OUT_TABLE, KM_OUT_JSON, KM_OUT_YAML };

/* "table", "json" or "yaml". Returns 0, or -1. */
int km_out_parse(const char *s, enum km_out_format *out);
void km_out_print(FILE *f, const json_t *doc, enum km_out_format fmt);

#endif
