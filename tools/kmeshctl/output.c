/* output.c — see output.h. */
#include "tools/kmeshctl/output.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int km_out_parse(const char *s, enum km_out_format *out)
{
	if (!strcmp(s, "table"))
		*out = KM_OUT_TABLE;
	else if (!strcmp(s, "json"))
		*out = KM_OUT_JSON;
	else if (!strcmp(s, "yaml"))
		*out = KM_OUT_YAML;
	else
		return -1;
	return 0;
}

/* ---- YAML: block style, as people write it: plain where that reads back as the same string,
 * double-quoted otherwise ------------------------------------------------------------------- */

/* Whether s reads back as this very string when written plain, in YAML 1.1 and 1.2 alike: it
 * starts with a letter, '_' or '/' (so no number, date, indicator or empty string), holds only
 * name-like characters (':' not at the end nor before a space: no mapping), and is none of the
 * words YAML reads as booleans or null. */
static int yaml_plain_ok(const char *s)
{
	static const char *const words[] = { "y", "n", "yes", "no", "true", "false", "on", "off",
					     "null" };

	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' || *s == '/'))
		return 0;
	for (const char *p = s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("_./@+-", *p))
			continue;
		if (*p == ':' && p[1] && p[1] != ' ')
			continue;
		return 0;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcasecmp(s, words[i]))
			return 0;
	return 1;
}

/* A JSON scalar as YAML: a JSON string with every non-ASCII character escaped (\uXXXX) is a valid
 * YAML double-quoted one once DEL is escaped too; a real always has a '.' (YAML 1.1 reads 1e+20
 * as a string). */
static void yaml_scalar(FILE *f, const json_t *v)
{
	char *text;

	if (json_is_real(v)) {
		char num[64];
		size_t n;

		snprintf(num, sizeof(num), "%.17g", json_real_value(v));
		n = strcspn(num, ".eEin"); /* no '.' before an exponent (nor inf, nan) */
		if (num[n] == 'e' || num[n] == 'E' || !num[n]) {
			char rest[64];

			snprintf(rest, sizeof(rest), "%s", num + n);
			snprintf(num + n, sizeof(num) - n, ".0%s", rest);
		}
		fputs(num, f);
		return;
	}
	if (json_is_string(v) && yaml_plain_ok(json_string_value(v))) {
		fputs(json_string_value(v), f);
		return;
	}
	text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII);
	for (const char *p = text ? text : "null"; *p; p++)
		if (*p == 0x7f)
			fputs("\\x7F", f);
		else
			fputc(*p, f);
	free(text);
}

static int yaml_block(const json_t *v)
{
	return (json_is_object(v) && json_object_size(v)) || (json_is_array(v) && json_array_size(v));
}

static void yaml_value(FILE *f, const json_t *v, int indent);

static void yaml_object(FILE *f, const json_t *v, int indent, int first_inline)
{
	const char *k;
	json_t *x;
	int first = 1;

	json_object_foreach((json_t *)v, k, x) {
		json_t *key = json_string(k);

		if (!(first && first_inline))
			fprintf(f, "%*s", indent, "");
		first = 0;
		yaml_scalar(f, key);
		json_decref(key);
		fputc(':', f);
		if (yaml_block(x)) {
			fputc('\n', f);
			yaml_value(f, x, indent + 2);
		} else {
			fputc(' ', f);
			yaml_scalar(f, x);
			fputc('\n', f);
		}
	}
}

static void yaml_value(FILE *f, const json_t *v, int indent)
{
	size_t i;
	json_t *x;

	if (json_is_object(v) && json_object_size(v)) {
		yaml_object(f, v, indent, 0);
	} else if (json_is_array(v) && json_array_size(v)) {
		json_array_foreach(v, i, x) {
			fprintf(f, "%*s- ", indent, "");
			if (json_is_object(x) && json_object_size(x)) {
				yaml_object(f, x, indent + 2, 1);
			} else if (yaml_block(x)) {
				fputc('\n', f);
				yaml_value(f, x, indent + 2);
			} else {
				yaml_scalar(f, x);
				fputc('\n', f);
			}
		}
	} else {
		fprintf(f, "%*s", indent, "");
		yaml_scalar(f, v);
		fputc('\n', f);
	}
}

/* ---- tables ---------------------------------------------------------------------------------- */

/* A cell's text (malloc'd): strings as they are, anything else as compact JSON. */
static char *cell(const json_t *v)
{
	if (!v)
		return strdup("");
	if (json_is_string(v))
		return strdup(json_string_value(v));
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

static int rows_of_objects(const json_t *v)
{
	size_t i;
	json_t *x;

	if (!json_is_array(v))
		return 0;
	json_array_foreach(v, i, x)
		if (!json_is_object(x))
			return 0;
	return 1;
}

static void table(FILE *f, const json_t *rows)
{
	json_t *cols = json_array(), *x, *y;
	const char *k;
	size_t i, c, n_cols, *width;

	json_array_foreach(rows, i, x) /* the columns, in the order keys first appear */
		json_object_foreach(x, k, y) {
			size_t j;
			int seen = 0;

			json_array_foreach(cols, j, y)
				seen |= !strcmp(json_string_value(y), k);
			if (!seen)
				json_array_append_new(cols, json_string(k));
		}
	n_cols = json_array_size(cols);
	width = calloc(n_cols + 1, sizeof(*width));
	if (!width) {
		json_decref(cols);
		return;
	}
	for (c = 0; c < n_cols; c++) {
		width[c] = strlen(json_string_value(json_array_get(cols, c)));
		json_array_foreach(rows, i, x) {
			char *t = cell(json_object_get(x, json_string_value(json_array_get(cols, c))));

			if (t && strlen(t) > width[c])
				width[c] = strlen(t);
			free(t);
		}
	}
	for (c = 0; c < n_cols; c++) {
		const char *h = json_string_value(json_array_get(cols, c));

		for (const char *p = h; *p; p++)
			fputc(toupper((unsigned char)*p), f);
		fprintf(f, "%*s", c + 1 < n_cols ? (int)(width[c] - strlen(h) + 2) : 0, "");
	}
	fputc('\n', f);
	json_array_foreach(rows, i, x) {
		for (c = 0; c < n_cols; c++) {
			char *t = cell(json_object_get(x, json_string_value(json_array_get(cols, c))));

			fprintf(f, "%-*s", c + 1 < n_cols ? (int)width[c] + 2 : 0, t ? t : "");
			free(t);
		}
		fputc('\n', f);
	}
	free(width);
	json_decref(cols);
}

static void table_doc(FILE *f, const json_t *doc)
{
	const char *k;
	json_t *x;
	int sections = json_is_object(doc) && json_object_size(doc);

	if (rows_of_objects(doc)) {
		table(f, doc);
		return;
	}
	json_object_foreach((json_t *)doc, k, x)
		sections &= rows_of_objects(x);
	if (sections) {
		int first = 1;

		json_object_foreach((json_t *)doc, k, x) {
			fprintf(f, "%s%s:\n", first ? "" : "\n", k);
			first = 0;
			if (json_array_size(x))
				table(f, x);
			else
				fprintf(f, "(none)\n");
		}
		return;
	}
	if (json_is_object(doc)) { /* keys and values */
		json_t *rows = json_array();

		json_object_foreach((json_t *)doc, k, x)
			json_array_append_new(rows, json_pack("{s:s, s:O}", "key", k, "value", x));
		table(f, rows);
		json_decref(rows);
		return;
	}
	yaml_scalar(f, doc);
	fputc('\n', f);
}

void km_out_print(FILE *f, const json_t *doc, enum km_out_format fmt)
{
	char *text;

	switch (fmt) {
	case KM_OUT_JSON:
		text = json_dumps(doc, JSON_ENCODE_ANY | JSON_INDENT(2));
		fprintf(f, "%s\n", text ? text : "null");
		free(text);
		break;
	case KM_OUT_YAML:
		yaml_value(f, doc, 0);
		break;
	case KM_OUT_TABLE:
		table_doc(f, doc);
		break;
	}
}
