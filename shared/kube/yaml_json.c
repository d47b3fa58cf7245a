/* yaml_json.c — YAML to jansson with libyaml's event parser (see yaml_json.h). */
#include "shared/kube/yaml_json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "shared/errbuf.h"

#define KM_YAML_MAX_DEPTH 64

static json_t *plain_scalar(const char *v, size_t len)
{
	char *end;
	long long n;

	if ((len == 4 && !strcmp(v, "true")) || (len == 4 && !strcmp(v, "True")))
		return json_true();
	if ((len == 5 && !strcmp(v, "false")) || (len == 5 && !strcmp(v, "False")))
		return json_false();
	if (len == 0 || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null"))
		return json_null();
	if ((v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) && len < 19) {
		errno = 0;
		n = strtoll(v, &end, 10);
		if (!errno && *end == '\0' && end != v && (v[0] != '-' || len > 1))
			return json_integer(n);
	}
	return json_stringn(v, len);
}

/* Parses the value whose first event is ev (already taken); returns a new reference or NULL. */
static json_t *parse_node(yaml_parser_t *p, yaml_event_t *ev, int depth, char *err, size_t errlen)
{
	json_t *node = NULL;
	yaml_event_t e;

	if (depth > KM_YAML_MAX_DEPTH) {
		km_errf(err, errlen, "nested more than %d deep", KM_YAML_MAX_DEPTH);
		return NULL;
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT: {
		const char *v = (const char *)ev->data.scalar.value;
		size_t len = ev->data.scalar.length;

		if (strlen(v) != len) {
			km_errf(err, errlen, "line %zu: a NUL byte inside a scalar",
				ev->start_mark.line + 1);
			return NULL;
		}
		node = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(v, len)
									 : json_stringn(v, len);
		if (!node)
			km_errf(err, errlen, "line %zu: not UTF-8 text", ev->start_mark.line + 1);
		return node;
	}
	case YAML_SEQUENCE_START_EVENT:
		node = json_array();
		for (;;) {
			json_t *item;

			if (!yaml_parser_parse(p, &e))
				goto parse_error;
			if (e.type == YAML_SEQUENCE_END_EVENT) {
				yaml_event_delete(&e);
				return node;
			}
			item = parse_node(p, &e, depth + 1, err, errlen);
			yaml_event_delete(&e);
			if (!item || json_array_append_new(node, item) != 0)
				goto fail;
		}
	case YAML_MAPPING_START_EVENT:
		node = json_object();
		for (;;) {
			json_t *value;
			char *key;

			if (!yaml_parser_parse(p, &e))
				goto parse_error;
			if (e.type == YAML_MAPPING_END_EVENT) {
				yaml_event_delete(&e);
				return node;
			}
			if (e.type != YAML_SCALAR_EVENT) {
				km_errf(err, errlen, "line %zu: a mapping key that is not a scalar",
					e.start_mark.line + 1);
				yaml_event_delete(&e);
				goto fail;
			}
			key = strndup((const char *)e.data.scalar.value, e.data.scalar.length);
			yaml_event_delete(&e);
			if (!key) {
				km_errf(err, errlen, "out of memory");
				goto fail;
			}
			if (!yaml_parser_parse(p, &e)) {
				free(key);
				goto parse_error;
			}
			value = parse_node(p, &e, depth + 1, err, errlen);
			yaml_event_delete(&e);
			if (!value || json_object_set_new(node, key, value) != 0) {
				if (value)
					km_errf(err, errlen, "key '%.64s' is not UTF-8 text", key);
				free(key);
				goto fail;
			}
			free(key);
		}
	case YAML_ALIAS_EVENT:
		km_errf(err, errlen, "line %zu: YAML aliases are not supported",
			ev->start_mark.line + 1);
		return NULL;
	default:
		km_errf(err, errlen, "line %zu: unexpected YAML event %d", ev->start_mark.line + 1,
			(int)ev->type);
		return NULL;
	}
parse_error:
	km_errf(err, errlen, "line %zu: %s", p->problem_mark.line + 1,
		p->problem ? p->problem : "YAML syntax error");
fail:
	json_decref(node);
	return NULL;
}

json_t *km_yaml_load(const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_event_t e;
	json_t *root = NULL;

	if (!yaml_parser_initialize(&p)) {
		km_errf(err, errlen, "out of memory");
		return NULL;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	/* stream start, document start, then the root node */
	for (;;) {
		if (!yaml_parser_parse(&p, &e)) {
			km_errf(err, errlen, "line %zu: %s", p.problem_mark.line + 1,
				p.problem ? p.problem : "YAML syntax error");
			break;
		}
		if (e.type == YAML_STREAM_START_EVENT || e.type == YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&e);
			continue;
		}
		if (e.type == YAML_STREAM_END_EVENT) {
			km_errf(err, errlen, "empty document");
			yaml_event_delete(&e);
			break;
		}
		root = parse_node(&p, &e, 0, err, errlen);
		yaml_event_delete(&e);
		break;
	}
	yaml_parser_delete(&p);
	return root;
}
