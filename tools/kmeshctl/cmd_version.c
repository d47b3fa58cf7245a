/* cmd_version.c — `kmeshctl version`: this client's build and each running process's (from its
 * hello reply), with its pid and socket; a process that cannot be reached is listed with why. */
#include "tools/kmeshctl/commands.h"

#include <unistd.h>

#include "shared/version.h"

static const char usage[] =
	"usage: kmeshctl version\n"
	"  the version of kmeshctl and of every kmesh process reachable on its socket\n";

int km_cmd_version(const struct km_ctl *ctl, int argc, char **argv)
{
	json_t *rows, *hellos, *h;
	int unreachable;
	size_t i;

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	if (argc > 0) {
		fputs(usage, stderr);
		return 2;
	}
	rows = json_array();
	json_array_append_new(rows, json_pack("{s:s, s:s, s:I, s:s}", "process", "kmeshctl",
					      "version", km_version(), "pid", (json_int_t)getpid(),
					      "socket", "-"));
	hellos = km_proc_hellos(ctl, &unreachable);
	json_array_foreach(hellos, i, h) {
		const char *version = json_string_value(json_object_get(h, "version"));
		json_t *r = json_object(), *pid = json_object_get(h, "pid"), *err = json_object_get(h, "error");

		json_object_set(r, "process", json_object_get(h, "process"));
		json_object_set_new(r, "version", json_string(version ? version : "-"));
		if (pid)
			json_object_set(r, "pid", pid);
		json_object_set(r, "socket", json_object_get(h, "socket"));
		if (err)
			json_object_set(r, "error", err);
		json_array_append_new(rows, r);
	}
	json_decref(hellos);
	return km_proc_print_rows(ctl, rows, unreachable);
}
