/* cmd_ready.c — `kmeshctl ready`: whether processes are ready, for probes and systemd's
 * ExecStartPost. The map writer, the IPsec agent and the tunnel are ready once they answer on their sockets
 * (the map writer listens only after its programs are attached); the xDS agent once it is linked
 * to the map writer and its first whole configuration is in the tables. */
#include "tools/kmeshctl/commands.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: kmeshctl ready [--wait SECONDS] [--live] [PROCESS...]\n"
	"  exit 0 when every PROCESS is ready, else 1 (default: map-writer xds-agent)\n"
	"    map-writer   answers on its socket: its programs are attached and its tables open\n"
	"    xds-agent    linked to the map writer, and its first whole configuration written\n"
	"    ipsec-agent  answers on its socket\n"
	"    tunnel       answers on its socket\n"
	"  --wait SECONDS  ask again every half second until all are ready or the time is up\n"
	"  --live          only whether each answers on its socket (a liveness probe: the xDS\n"
	"                  agent is live while istiod is away)\n";

/* Whether p is ready now; why says what is missing. */
static int ready_now(const struct km_ctl *ctl, enum km_proc p, int live, char *why, size_t len)
{
	struct km_sync_client cl;
	json_t *dump, *mw;

	if (p != KM_PROC_XDS_AGENT || live) {
		if (km_proc_connect(ctl, p, &cl, why, len) != 0)
			return 0;
		km_sync_close(&cl);
		return 1;
	}
	if (!(dump = km_proc_agent_dump(ctl, p, 1, why, len)))
		return 0;
	mw = json_object_get(dump, "map_writer");
	if (!json_is_true(json_object_get(mw, "connected")))
		snprintf(why, len, "not linked to the map writer");
	else if (json_integer_value(json_object_get(mw, "last_synced_unix_us")) == 0)
		snprintf(why, len, "its whole configuration is not yet in the tables");
	else
		*why = '\0';
	json_decref(dump);
	return !*why;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int km_cmd_ready(const struct km_ctl *ctl, int argc, char **argv)
{
	enum km_proc procs[KM_PROC_COUNT] = { KM_PROC_MAP_WRITER, KM_PROC_XDS_AGENT };
	size_t n = 0, i;
	double wait_s = 0, until;
	char why[KM_PROC_COUNT][512];
	int ready[KM_PROC_COUNT] = { 0 }, all, live = 0;
	json_t *rows;

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	for (int a = 0; a < argc; a++) {
		char *end;

		if (!strcmp(argv[a], "--wait") && a + 1 < argc) {
			wait_s = strtod(argv[++a], &end);
			if (*end || end == argv[a] || wait_s < 0 || wait_s > 3600) {
				fprintf(stderr, "kmeshctl ready: --wait takes 0 to 3600 seconds\n");
				return 2;
			}
		} else if (!strcmp(argv[a], "--live")) {
			live = 1;
		} else if (n < KM_PROC_COUNT && km_proc_parse(argv[a], &procs[n]) == 0) {
			n++;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!n)
		n = 2;
	until = now_s() + wait_s;
	for (;;) {
		all = 1;
		for (i = 0; i < n; i++) {
			if (!ready[i])
				ready[i] = ready_now(ctl, procs[i], live, why[i], sizeof(why[i]));
			all &= ready[i];
		}
		if (all || now_s() >= until)
			break;
		usleep(500 * 1000);
	}
	rows = json_array();
	for (i = 0; i < n; i++) {
		json_t *r = json_pack("{s:s, s:b}", "process", km_proc_name(procs[i]), "ready",
				      ready[i]);

		if (!ready[i])
			json_object_set_new(r, "reason", json_string(why[i]));
		json_array_append_new(rows, r);
	}
	km_out_print(stdout, rows, ctl->format);
	json_decref(rows);
	return all ? 0 : 1;
}
