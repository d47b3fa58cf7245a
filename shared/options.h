/* options.h — table-driven command-line parsing with environment-variable defaults and a
 * generated --help. Every daemon and tool declares its flags once, in one table. */
#ifndef KM_SHARED_OPTIONS_H
#define KM_SHARED_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

enum km_opt_type {
	KM_OPT_STRING, /* target: const char ** */
	KM_OPT_UINT,   /* target: uint64_t *, bounded by [min, max] */
	KM_OPT_BOOL,   /* target: int *; flag without argument */
	KM_OPT_FUNC,   /* fn(arg, target, err, errlen) parses; may be repeated */
};

struct km_option {
	const char *name; /* long name without "--" */
	enum km_opt_type type;
	void *target;
	const char *metavar; /* shown in --help, e.g. "PATH" */
	const char *help;    /* one line; the default is shown from the target, unless the line
			      * already says "default" (or it is an empty string) */
	const char *env;     /* environment variable giving a default, or NULL */
	uint64_t min, max;   /* KM_OPT_UINT */
	int (*fn)(const char *arg, void *target, char *err, size_t errlen);
	char short_name; /* e.g. 'o' for -o; 0: none ('h' is --help's) */
};

/*
 * Parse argv against opts (terminated by an entry with name == NULL). Environment variables
 * apply first, then flags. Positional arguments are left in argv[*first_positional..argc-1].
 * Returns 0 on success, 1 when --help was printed (exit 0), -1 on error (message printed).
 */
int km_options_parse(const struct km_option *opts, int argc, char **argv, const char *synopsis,
		     const char *description, int *first_positional);
/* A ready-made KM_OPT_FUNC parser for --log-level: sets the process log level (shared/log.h). */
int km_option_log_level(const char *arg, void *target, char *err, size_t errlen);
/* --log-format text|json (km_log_set_format); target unused. */
int km_option_log_format(const char *arg, void *target, char *err, size_t errlen);
/* A ready-made KM_OPT_FUNC parser for on|off switches: target is an int, set to 1 or 0. */
int km_option_on_off(const char *arg, void *target, char *err, size_t errlen);

void km_options_usage(const struct km_option *opts, const char *prog, const char *synopsis,
		      const char *description);

#endif
