/* cmd_switch.c — kmeshctl's run-time switches (SetConfig), each owned by one process:
 *   monitoring enable|disable|status   map writer: sockops reports connections (metrics, log)
 *   authz enable|disable|status        map writer: authorization enforced
 *   accesslog enable|disable|status [--format text|json]   xDS agent: the access log
 * Each prints the owner's switches after the change. Also the BPF log level for `log`. */
#include "tools/kmeshctl/commands.h"

#include <stdio.h>
#include <string.h>

/* Send SetConfig to p; *state gets the reply's switches (free the reply with km_msg_free).
 * Returns 0, or -1 with the reason printed. */
static int send_config(const struct km_ctl *ctl, enum km_proc p, Kmesh__Ipc__SetConfig *c,
		       km_envelope **reply)
{
	km_envelope req = KMESH__IPC__ENVELOPE__INIT;
	char err[512];

	req.body_case = KMESH__IPC__ENVELOPE__BODY_SET_CONFIG;
	req.set_config = c;
	if (km_proc_call(ctl, p, &req, reply, err, sizeof(err)) != 0) {
		fprintf(stderr, "kmeshctl: %s\n", err);
		return -1;
	}
	if ((*reply)->reply->body_case != KMESH__IPC__REPLY__BODY_CONFIG) {
		fprintf(stderr, "kmeshctl: kmesh-%s sent no state\n", km_proc_name(p));
		km_msg_free(*reply);
		return -1;
	}
	return 0;
}

int km_ctl_bpf_log_level(const struct km_ctl *ctl, const char *set, char *level, size_t len)
{
	Kmesh__Ipc__SetConfig c = KMESH__IPC__SET_CONFIG__INIT;
	km_envelope *rep;

	c.bpf_log_level = (char *)(set ? set : "");
	if (send_config(ctl, KM_PROC_MAP_WRITER, &c, &rep) != 0)
		return -1;
	snprintf(level, len, "%s", rep->reply->config->bpf_log_level);
	km_msg_free(rep);
	return 0;
}

static int action(const char *arg, Kmesh__Ipc__Toggle *t)
{
	if (!strcmp(arg, "enable"))
		*t = KMESH__IPC__TOGGLE__TOGGLE_ON;
	else if (!strcmp(arg, "disable"))
		*t = KMESH__IPC__TOGGLE__TOGGLE_OFF;
	else if (!strcmp(arg, "status"))
		*t = KMESH__IPC__TOGGLE__TOGGLE_UNCHANGED;
	else
		return -1;
	return 0;
}

static void print_state(const struct km_ctl *ctl, enum km_proc p, const Kmesh__Ipc__ConfigState *s)
{
	json_t *row = json_pack("{s:s}", "process", km_proc_name(p));

	if (p == KM_PROC_MAP_WRITER) {
		json_object_set_new(row, "monitoring", json_string(s->monitoring ? "enabled" : "disabled"));
		json_object_set_new(row, "authz", json_string(s->authz ? "enabled" : "disabled"));
		json_object_set_new(row, "bpf_log_level", json_string(s->bpf_log_level));
		json_object_set_new(row, "subscribers", json_integer(s->subscribers));
		json_object_set_new(row, "reports_lost", json_integer((json_int_t)s->conn_events_dropped));
	} else {
		json_object_set_new(row, "access_log", json_string(s->access_log ? "enabled" : "disabled"));
		json_object_set_new(row, "format", json_string(s->access_log_format));
	}
	{
		json_t *rows = json_array();

		json_array_append_new(rows, row);
		km_out_print(stdout, rows, ctl->format);
		json_decref(rows);
	}
}

static int run(const struct km_ctl *ctl, const char *name, const char *usage, int argc, char **argv)
{
	Kmesh__Ipc__SetConfig c = KMESH__IPC__SET_CONFIG__INIT;
	Kmesh__Ipc__Toggle t;
	enum km_proc p = strcmp(name, "accesslog") ? KM_PROC_MAP_WRITER : KM_PROC_XDS_AGENT;
	km_envelope *rep;

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	if (argc < 1 || action(argv[0], &t) != 0) {
		fputs(usage, stderr);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (p == KM_PROC_XDS_AGENT && !strcmp(argv[i], "--format") && i + 1 < argc &&
		    (!strcmp(argv[i + 1], "text") || !strcmp(argv[i + 1], "json"))) {
			c.access_log_format = argv[++i];
			continue;
		}
		fputs(usage, stderr);
		return 2;
	}
	if (!strcmp(name, "monitoring"))
		c.monitoring = t;
	else if (!strcmp(name, "authz"))
		c.authz = t;
	else
		c.access_log = t;
	if (send_config(ctl, p, &c, &rep) != 0)
		return 1;
	print_state(ctl, p, rep->reply->config);
	km_msg_free(rep);
	if (p == KM_PROC_XDS_AGENT && t == KMESH__IPC__TOGGLE__TOGGLE_ON) {
		Kmesh__Ipc__SetConfig q = KMESH__IPC__SET_CONFIG__INIT;

		/* the log needs the reports: say so when they are off */
		if (send_config(ctl, KM_PROC_MAP_WRITER, &q, &rep) == 0) {
			if (!rep->reply->config->monitoring)
				fprintf(stderr, "kmeshctl: warning: monitoring is disabled, so no connection "
						"is reported; kmeshctl monitoring enable\n");
			km_msg_free(rep);
		}
	}
	return 0;
}

int km_cmd_monitoring(const struct km_ctl *ctl, int argc, char **argv)
{
	return run(ctl, "monitoring",
		   "usage: kmeshctl monitoring enable|disable|status\n"
		   "  the map writer's connection reports (metrics, access log); off: no reports\n",
		   argc, argv);
}

int km_cmd_authz(const struct km_ctl *ctl, int argc, char **argv)
{
	return run(ctl, "authz",
		   "usage: kmeshctl authz enable|disable|status\n"
		   "  enforcement of authorization policies on this node; disabled: every connection\n"
		   "  passes; enabled again: open connections the policies deny are closed\n",
		   argc, argv);
}

int km_cmd_accesslog(const struct km_ctl *ctl, int argc, char **argv)
{
	return run(ctl, "accesslog",
		   "usage: kmeshctl accesslog enable|disable|status [--format text|json]\n"
		   "  the xDS agent's access log: a line on its stdout per connection opened and\n"
		   "  closed by an enrolled pod (needs monitoring enabled)\n",
		   argc, argv);
}
