/* cmd_log.c — `kmeshctl log [--set PROCESS:LEVEL ...]`: each process's log level (from its hello
 * reply), and setting it (SetLogLevel) for one process or all; "bpf" is the programs' log level,
 * which the map writer keeps (SetConfig). */
#include "tools/kmeshctl/commands.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: kmeshctl log [--set PROCESS:LEVEL]...\n"
	"  show each process's log level; --set changes it first (repeatable)\n"
	"  PROCESS: map-writer, xds-agent, ipsec-agent, tunnel, all (each of them), or bpf (the\n"
	"  programs' lines, which the map writer logs as bpf: ...); LEVEL: error, warn, info, debug\n";

static int set_level(const struct km_ctl *ctl, enum km_proc p, const char *level)
{
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__SetLogLevel l = KMESH__IPC__SET_LOG_LEVEL__INIT;
	char err[512];

	l.level = (char *)level;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL;
	req.set_log_level = &l;
	if (km_proc_call(ctl, p, &req, &rep, err, sizeof(err)) != 0) {
		fprintf(stderr, "kmeshctl: %s\n", err);
		return -1;
	}
	km_msg_free(rep);
	return 0;
}

int km_cmd_log(const struct km_ctl *ctl, int argc, char **argv)
{
	json_t *rows, *hellos, *h;
	int failed = 0, unreachable = 0;
	size_t k;

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	for (int i = 0; i < argc; i++) { /* every --set first, all checked before any is sent */
		const char *colon = argc > i + 1 ? strchr(argv[i + 1], ':') : NULL;
		char name[32];
		enum km_proc p;

		if (strcmp(argv[i], "--set") || !colon || (size_t)(colon - argv[i + 1]) >= sizeof(name)) {
			fputs(usage, stderr);
			return 2;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(colon - argv[i + 1]), argv[i + 1]);
		if (strcmp(name, "all") && strcmp(name, "bpf") && km_proc_parse(name, &p) != 0) {
			fprintf(stderr, "kmeshctl: no process '%s' (map-writer, xds-agent, ipsec-agent, "
				"tunnel, all, bpf)\n", name);
			return 2;
		}
		i++;
	}
	for (int i = 0; i + 1 < argc; i += 2) {
		const char *colon = strchr(argv[i + 1], ':');
		char name[32];
		enum km_proc p;

		snprintf(name, sizeof(name), "%.*s", (int)(colon - argv[i + 1]), argv[i + 1]);
		if (!strcmp(name, "bpf")) {
			char now[16];

			failed |= km_ctl_bpf_log_level(ctl, colon + 1, now, sizeof(now)) != 0;
		} else if (!strcmp(name, "all")) { /* every process that runs (a node may have no IPsec) */
			for (int q = 0; q < KM_PROC_COUNT; q++) {
				struct km_sync_client cl;
				char err[512];

				if (km_proc_connect(ctl, (enum km_proc)q, &cl, err, sizeof(err)) != 0)
					continue; /* shown as not running below */
				km_sync_close(&cl);
				failed |= set_level(ctl, (enum km_proc)q, colon + 1) != 0;
			}
		} else if (km_proc_parse(name, &p) == 0) {
			failed |= set_level(ctl, p, colon + 1) != 0;
		}
	}
	hellos = km_proc_hellos(ctl, &unreachable);
	rows = json_array();
	json_array_foreach(hellos, k, h) {
		const char *level = json_string_value(json_object_get(h, "log_level"));
		json_t *r = json_pack("{s:O, s:s}", "process", json_object_get(h, "process"), "level",
				      level ? level : "-");

		if (json_object_get(h, "error"))
			json_object_set(r, "error", json_object_get(h, "error"));
		json_array_append_new(rows, r);
		if (!strcmp(json_string_value(json_object_get(h, "process")), "map-writer") &&
		    !json_object_get(h, "error")) {
			char bpf[16];

			if (km_ctl_bpf_log_level(ctl, NULL, bpf, sizeof(bpf)) == 0)
				json_array_append_new(rows, json_pack("{s:s, s:s}", "process", "bpf",
								      "level", bpf));
		}
	}
	json_decref(hellos);
	return km_proc_print_rows(ctl, rows, unreachable) || failed;
}
