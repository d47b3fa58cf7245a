/* command_table.c — kmeshctl's one table of commands (commands.h): what each is called, what
 * it says in the overview, what may follow it and its flags. main.c dispatches from it, the
 * overview in --help is printed from it, and `kmeshctl completion` generates the shells'
 * completion from it. */
#include "tools/kmeshctl/commands.h"

#include <stdio.h>
#include <string.h>

#define VALUE "" /* a flag that takes a free value */
#define FILE_VALUE "@file"

static const struct km_flag_spec global_flags[] = {
	{ "output", 'o', "table json yaml" },
	{ "map-writer-socket", 0, FILE_VALUE },
	{ "xds-socket", 0, FILE_VALUE },
	{ "ipsec-socket", 0, FILE_VALUE },
	{ "tunnel-socket", 0, FILE_VALUE },
	{ "timeout-ms", 0, VALUE },
	{ "kubeconfig", 0, FILE_VALUE },
	{ "node", 0, VALUE },
	{ "all-nodes", 0, NULL },
	{ "kmesh-namespace", 0, VALUE },
	{ "kubectl", 0, FILE_VALUE },
	{ "help", 'h', NULL },
	{ NULL },
};

static const char *const processes[] = { "map-writer", "xds-agent", "ipsec-agent", "tunnel",
					  NULL };
static const struct km_flag_spec ready_flags[] = {
	{ "wait", 0, VALUE }, { "live", 0, NULL }, { NULL },
};
static const struct km_flag_spec enroll_flags[] = { { "name", 0, VALUE }, { NULL } };
static const struct km_flag_spec log_flags[] = {
	{ "set", 0, "map-writer:debug xds-agent:debug ipsec-agent:debug tunnel:debug all:debug bpf:debug "
		    "map-writer:info xds-agent:info ipsec-agent:info tunnel:info all:info bpf:info "
		    "map-writer:warn xds-agent:warn ipsec-agent:warn tunnel:warn all:warn bpf:warn "
		    "map-writer:error xds-agent:error ipsec-agent:error tunnel:error all:error "
		    "bpf:error" },
	{ NULL },
};
static const char *const dump_words[] = { "tables", "xds", "policies", "ipsec", "certs", "tunnels",
					   NULL };
static const struct km_flag_spec dump_flags[] = {
	{ "table", 0, "manage frontend service endpoint backend port_override authz_stats "
		      "ipsec_peer ipsec_cidr" },
	{ "max-rows", 0, VALUE },
	{ NULL },
};
static const char *const inject_words[] = { "xds-agent", "ipsec-agent", NULL };
static const char *const switch_words[] = { "enable", "disable", "status", NULL };
static const struct km_flag_spec accesslog_flags[] = {
	{ "format", 0, "text json" }, { NULL },
};
static const char *const secret_words[] = { "create", "get", "delete", NULL };
static const struct km_flag_spec secret_flags[] = { { "key-file", 0, FILE_VALUE }, { NULL } };
static const char *const waypoint_words[] = { "generate", "apply", "list", "status", "delete", NULL };
static const struct km_flag_spec waypoint_flags[] = {
	{ "namespace", 'n', VALUE },
	{ "name", 0, VALUE },
	{ "for", 0, "service workload all none" },
	{ "revision", 'r', VALUE },
	{ "image", 0, VALUE },
	{ "enroll-namespace", 0, NULL },
	{ "overwrite", 0, NULL },
	{ "wait", 'w', NULL },
	{ "timeout", 0, VALUE },
	{ "all-namespaces", 'A', NULL },
	{ "all", 0, NULL },
	{ NULL },
};
static const char *const completion_words[] = { "bash", "zsh", "fish", NULL };

static int run_enroll(const struct km_ctl *ctl, int argc, char **argv)
{
	return km_cmd_enroll(ctl, argc, argv, 1);
}

static int run_unenroll(const struct km_ctl *ctl, int argc, char **argv)
{
	return km_cmd_enroll(ctl, argc, argv, 0);
}

const struct km_command km_commands[] = {
	{ "version", "kmeshctl's version and every running process's", NULL, NULL, km_cmd_version },
	{ "ready", "[PROCESS...]: whether processes are ready (probes, systemd): exit 0 or 1",
	  processes, ready_flags, km_cmd_ready },
	{ "enroll", "[NETNS]: a network namespace into the mesh (VMs: this machine's)", NULL,
	  enroll_flags, run_enroll },
	{ "unenroll", "[NETNS]: a network namespace out of the mesh", NULL, enroll_flags,
	  run_unenroll },
	{ "log", "log levels of the processes; --set PROCESS:LEVEL changes one", NULL, log_flags,
	  km_cmd_log },
	{ "dump", "tables | xds | policies | ipsec | certs: the state of a process", dump_words, dump_flags,
	  km_cmd_dump },
	{ "inject", "PROCESS FILE|-: an event applied by an agent as from its source", inject_words,
	  NULL, km_cmd_inject },
	{ "demand", "KEY...: Address keys an agent on demand asks istiod for now", NULL, NULL,
	  km_cmd_demand },
	{ "monitoring", "enable|disable|status: connection reports (metrics, access log)",
	  switch_words, NULL, km_cmd_monitoring },
	{ "accesslog", "enable|disable|status [--format text|json]: the access log", switch_words,
	  accesslog_flags, km_cmd_accesslog },
	{ "authz", "enable|disable|status: enforcement of authorization policies", switch_words,
	  NULL, km_cmd_authz },
	{ "secret", "create|get|delete: the IPsec key (Kubernetes API)", secret_words, secret_flags,
	  km_cmd_secret },
	{ "waypoint", "generate|apply|list|status|delete: waypoints (Kubernetes API)",
	  waypoint_words, waypoint_flags, km_cmd_waypoint },
	{ "completion", "bash|zsh|fish: the shell's completion script for kmeshctl",
	  completion_words, NULL, km_cmd_completion },
	{ NULL },
};

const struct km_flag_spec *km_global_flags(void)
{
	return global_flags;
}

const struct km_command *km_command_find(const char *name)
{
	for (const struct km_command *c = km_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

size_t km_commands_overview(char *buf, size_t len, const char *head, const char *tail)
{
	size_t n = 0;

	n += (size_t)snprintf(buf, len, "%sCommands:\n", head);
	for (const struct km_command *c = km_commands; c->name && n < len; c++)
		n += (size_t)snprintf(buf + n, len - n, "  %-18s %s\n", c->name, c->summary);
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, "  %-18s %s\n%s", "COMMAND --help",
				      "a command's own usage", tail);
	return n;
}
