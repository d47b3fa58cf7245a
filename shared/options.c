/* options.c — table-driven flag parsing (see options.h). */
#include "shared/options.h"

#include "shared/log.h"
#include "shared/version.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t count_options(const struct km_option *opts)
{
	size_t n = 0;

	while (opts[n].name)
		n++;
	return n;
}

static int apply(const struct km_option *o, const char *arg, const char *source)
{
	char err[256] = "";

	switch (o->type) {
	case KM_OPT_STRING:
		*(const char **)o->target = arg;
		return 0;
	case KM_OPT_BOOL:
		if (!arg || strcmp(arg, "1") == 0 || strcmp(arg, "true") == 0 || strcmp(arg, "yes") == 0) {
			*(int *)o->target = 1;
			return 0;
		}
		if (strcmp(arg, "0") == 0 || strcmp(arg, "false") == 0 || strcmp(arg, "no") == 0) {
			*(int *)o->target = 0;
			return 0;
		}
		fprintf(stderr, "%s --%s: expected true or false, got '%s'\n", source, o->name, arg);
		return -1;
	case KM_OPT_UINT: {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(arg, &end, 0);
		if (errno || end == arg || *end || arg[0] == '-') {
			fprintf(stderr, "%s --%s: '%s' is not a non-negative integer\n", source, o->name,
				arg);
			return -1;
		}
		if (v < o->min || v > o->max) {
			fprintf(stderr, "%s --%s: %llu is out of range [%" PRIu64 ", %" PRIu64 "]\n",
				source, o->name, v, o->min, o->max);
			return -1;
		}
		*(uint64_t *)o->target = v;
		return 0;
	}
	case KM_OPT_FUNC:
		if (o->fn(arg, o->target, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s --%s: %s\n", source, o->name, err[0] ? err : "invalid value");
			return -1;
		}
		return 0;
	}
	return -1;
}

void km_options_usage(const struct km_option *opts, const char *prog, const char *synopsis,
		      const char *description)
{
	printf("Usage: %s %s\n\n%s\n\nOptions:\n", prog, synopsis, description);
	for (const struct km_option *o = opts; o->name; o++) {
		char left[96], sn[8] = "";

		if (o->short_name)
			snprintf(sn, sizeof(sn), "-%c, ", o->short_name);
		snprintf(left, sizeof(left), "%s--%s%s%s", sn, o->name, o->metavar ? " " : "",
			 o->metavar ? o->metavar : "");
		printf("  %-34s %s", left, o->help);
		/* the default once: not where the help text already says it, nor an empty one */
		if (strstr(o->help, "default")) {
			/* said */
		} else if (o->type == KM_OPT_STRING && *(const char **)o->target &&
			   **(const char **)o->target) {
			printf(" (default: %s)", *(const char **)o->target);
		} else if (o->type == KM_OPT_UINT) {
			printf(" (default: %" PRIu64 ")", *(uint64_t *)o->target);
		}
		if (o->env)
			printf(" [env %s]", o->env);
		printf("\n");
	}
	printf("  %-34s %s\n", "--help", "show this help and exit");
	printf("  %-34s %s\n", "--version", "print the build's version and exit");
}

int km_options_parse(const struct km_option *opts, int argc, char **argv, const char *synopsis,
		     const char *description, int *first_positional)
{
	size_t n = count_options(opts);
	struct option *lo = calloc(n + 3, sizeof(*lo));
	char shorts[2 + 2 * 64 + 1] = "+h"; /* "+": stop at the first positional (a command) */
	size_t ns = 2;
	int rc = 0;

	if (!lo) {
		fprintf(stderr, "out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const char *v = opts[i].env ? getenv(opts[i].env) : NULL;

		if (v && *v && apply(&opts[i], v, opts[i].env) != 0) {
			free(lo);
			return -1;
		}
		lo[i].name = opts[i].name;
		lo[i].has_arg = opts[i].type == KM_OPT_BOOL ? optional_argument : required_argument;
		lo[i].val = 256 + (int)i;
		if (opts[i].short_name && ns + 3 < sizeof(shorts)) {
			shorts[ns++] = opts[i].short_name;
			if (opts[i].type != KM_OPT_BOOL)
				shorts[ns++] = ':';
			shorts[ns] = '\0';
		}
	}
	lo[n].name = "help";
	lo[n].val = 'h';
	lo[n + 1].name = "version";
	lo[n + 1].val = 'V';
	optind = 1;
	opterr = 0;
	for (;;) {
		int idx = -1;
		int c = getopt_long(argc, argv, shorts, lo, &idx);

		if (c == -1)
			break;
		if (c == 'h') {
			km_options_usage(opts, argv[0], synopsis, description);
			rc = 1;
			break;
		}
		if (c == 'V') {
			printf("%s %s\n", argv[0], km_version());
			rc = 1;
			break;
		}
		if (c == '?' || c == ':') {
			if (optopt && optopt < 256)
				fprintf(stderr, "%s: unknown option '-%c' (see --help)\n", argv[0], optopt);
			else
				fprintf(stderr, "%s: unknown option or missing argument in '%s' (see --help)\n",
					argv[0], argv[optind - 1]);
			rc = -1;
			break;
		}
		if (c < 256) /* a short name */
			for (size_t i = 0; i < n; i++)
				if (opts[i].short_name == c)
					c = 256 + (int)i;
		if (c < 256 || apply(&opts[c - 256], optarg, argv[0]) != 0) {
			rc = -1;
			break;
		}
	}
	if (first_positional)
		*first_positional = optind;
	free(lo);
	return rc;
}

int km_option_on_off(const char *arg, void *target, char *err, size_t errlen)
{
	if (strcmp(arg, "on") && strcmp(arg, "off")) {
		snprintf(err, errlen, "'%s' is not on or off", arg);
		return -1;
	}
	*(int *)target = !strcmp(arg, "on");
	return 0;
}

int km_option_log_format(const char *arg, void *target, char *err, size_t errlen)
{
	enum km_log_format f;

	(void)target;
	if (km_log_parse_format(arg, &f) != 0) {
		snprintf(err, errlen, "'%s' is not text or json", arg);
		return -1;
	}
	km_log_set_format(f);
	return 0;
}

int km_option_log_level(const char *arg, void *target, char *err, size_t errlen)
{
	enum km_log_level lvl;

	(void)target;
	if (km_log_parse_level(arg, &lvl) != 0) {
		snprintf(err, errlen, "'%s' is not one of error, warn, info, debug", arg);
		return -1;
	}
	km_log_set_level(lvl);
	return 0;
}
