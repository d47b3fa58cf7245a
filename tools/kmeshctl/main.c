/* main.c — kmeshctl: operate kmesh on this node. Global flags (shared/options.c, as every
 * binary's; their names also in command_table.c, for completion), then one command family from
 * the command table (command_table.c; one file each: cmd_version.c, cmd_log.c, cmd_dump.c,
 * cmd_inject.c, cmd_switch.c, cmd_secret.c, cmd_waypoint.c, cmd_completion.c), which prints
 * through output.h;
 * the Kubernetes API through kube.c. The local processes are reached on their Unix sockets
 * (procs.c) as the admin role. */
#include <stdio.h>
#include <string.h>

#include "shared/kube_name.h"
#include "shared/options.h"
#include "tools/kmeshctl/commands.h"
#include "tools/kmeshctl/remote.h"

static const char description_head[] =
	"Operates kmesh on this node over the processes' Unix sockets, or on other nodes\n"
	"(--node, --all-nodes) through the Kubernetes API.\n"
	"\n";
static const char description_tail[] =
	"\n"
	"Exit codes: 0 ok, 1 failed (the reason on stderr), 2 usage.";

static int format_given; /* -o was given: a single remote node gets it as given */

static int parse_format(const char *arg, void *target, char *err, size_t errlen)
{
	format_given = 1;
	if (km_out_parse(arg, target) == 0)
		return 0;
	snprintf(err, errlen, "'%s' is not table, json or yaml", arg);
	return -1;
}

/* The global option an argument names ("--output", "--output=json", "-o"), or NULL. */
static const struct km_option *global_option(const struct km_option *opts, const char *arg,
					      int *inline_value)
{
	*inline_value = 0;
	if (arg[0] != '-' || !arg[1])
		return NULL;
	for (const struct km_option *o = opts; o->name; o++) {
		size_t n = strlen(o->name);

		if (arg[1] != '-') {
			if (o->short_name && arg[1] == o->short_name) {
				*inline_value = arg[2] != '\0'; /* -ojson */
				return o;
			}
			continue;
		}
		if (!strncmp(arg + 2, o->name, n) && (arg[2 + n] == '\0' || arg[2 + n] == '=')) {
			*inline_value = arg[2 + n] == '=';
			return o;
		}
	}
	return NULL;
}

/* Global options go anywhere, as in kubectl: "kmeshctl version -o json" is "kmeshctl -o json
 * version". Those after the command are moved before it (the commands' own flags have other
 * names); "--" ends the search. argv is reordered in place. */
static void hoist_global_options(const struct km_option *opts, int argc, char **argv)
{
	int cmd = 0, inl;

	for (int i = 1; i < argc && !cmd; i++) { /* the command: the first argument not an option */
		const struct km_option *o = global_option(opts, argv[i], &inl);

		if (!strcmp(argv[i], "--"))
			return;
		if (o)
			i += !inl && o->type != KM_OPT_BOOL;
		else if (argv[i][0] != '-')
			cmd = i;
	}
	if (!cmd)
		return;
	for (int i = cmd + 1; i < argc; i++) {
		const struct km_option *o = global_option(opts, argv[i], &inl);
		int take = o ? 1 + (!inl && o->type != KM_OPT_BOOL && i + 1 < argc) : 0;

		if (!strcmp(argv[i], "--"))
			return;
		if (!take)
			continue;
		/* rotate argv[cmd..i+take-1] so the option (and its value) comes before the command */
		for (int t = 0; t < take; t++) {
			char *moved = argv[i + t];

			memmove(&argv[cmd + 1], &argv[cmd], (size_t)(i + t - cmd) * sizeof(char *));
			argv[cmd++] = moved;
		}
		i += take - 1;
	}
}

int main(int argc, char **argv)
{
	struct km_ctl ctl = {
		.socket = { "/run/kmesh/map-writer.sock", "/run/kmesh/xds-agent/admin.sock",
			    "/run/kmesh/ipsec-agent.sock", "/run/kmesh/tunnel/tunnel.sock" },
		.format = KM_OUT_TABLE,
	};
	uint64_t timeout_ms = 5000;
	static struct km_remote remote = { .namespace = "kmesh-system", .kubectl = "kubectl" };
	const struct km_option opts[] = {
		{ "output", KM_OPT_FUNC, &ctl.format, "FORMAT", "table (default), json or yaml",
		  NULL, 0, 0, parse_format, 'o' },
		{ "map-writer-socket", KM_OPT_STRING, &ctl.socket[KM_PROC_MAP_WRITER], "PATH",
		  "the map writer's socket", "KMESH_MAP_WRITER_SOCKET" },
		{ "xds-socket", KM_OPT_STRING, &ctl.socket[KM_PROC_XDS_AGENT], "PATH",
		  "the xDS agent's admin socket", "KMESH_XDS_SOCKET" },
		{ "ipsec-socket", KM_OPT_STRING, &ctl.socket[KM_PROC_IPSEC_AGENT], "PATH",
		  "the IPsec agent's admin socket", "KMESH_IPSEC_SOCKET" },
		{ "tunnel-socket", KM_OPT_STRING, &ctl.socket[KM_PROC_TUNNEL], "PATH",
		  "the tunnel's socket", "KMESH_TUNNEL_SOCKET" },
		{ "timeout-ms", KM_OPT_UINT, &timeout_ms, "MS", "for each request", NULL, 1, 600000 },
		{ "kubeconfig", KM_OPT_STRING, &ctl.kubeconfig, "PATH",
		  "secret, waypoint, --node: the Kubernetes API's kubeconfig (default ~/.kube/config, "
		  "else the pod's service account)", "KUBECONFIG" },
		{ "node", KM_OPT_FUNC, &remote, "NAME",
		  "run the command on this node's kmesh pod through the Kubernetes API (kubectl exec); "
		  "repeatable, or a comma-separated list: the answers merged, led by a NODE column",
		  NULL, 0, 0, km_remote_parse_node },
		{ "all-nodes", KM_OPT_BOOL, &remote.all_nodes, NULL,
		  "run the command on every node's kmesh pod, the answers merged into one table" },
		{ "kmesh-namespace", KM_OPT_STRING, &remote.namespace, "NS",
		  "with --node/--all-nodes: the namespace of kmesh's DaemonSet (default kmesh-system)",
		  "KMESH_NAMESPACE" },
		{ "kubectl", KM_OPT_STRING, &remote.kubectl, "PATH",
		  "with --node/--all-nodes: the kubectl that runs the exec (default: kubectl on PATH)",
		  "KMESH_KUBECTL" },
		{ 0 },
	};
	static char description[2048];
	const struct km_command *c;
	int first, rc;
	const char *cmd;

	hoist_global_options(opts, argc, argv);
	km_commands_overview(description, sizeof(description), description_head, description_tail);
	rc = km_options_parse(opts, argc, argv, "[OPTIONS] COMMAND [ARGS]", description, &first);
	if (rc)
		return rc > 0 ? 0 : 2;
	ctl.timeout_ms = (int)timeout_ms;
	if (first >= argc) {
		fprintf(stderr, "kmeshctl: no command (see --help)\n");
		return 2;
	}
	cmd = argv[first];
	argc -= first + 1;
	argv += first + 1;
	c = km_command_find(cmd);
	if (c && km_remote_wanted(&remote)) {
		if (!strcmp(cmd, "completion") || !strcmp(cmd, "secret") || !strcmp(cmd, "waypoint")) {
			fprintf(stderr, "kmeshctl: %s is not a node command: run it without --node or "
					"--all-nodes\n", cmd);
			return 2;
		}
		for (int i = 0; i < argc; i++)
			if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
				return c->run(&ctl, argc, argv); /* this build's help */
		if (!km_kube_valid_name(remote.namespace)) {
			fprintf(stderr, "kmeshctl: --kmesh-namespace '%s' is not a namespace name\n",
				remote.namespace);
			return 2;
		}
		remote.format_given = format_given;
		return km_remote_run(&ctl, &remote, cmd, argc, argv);
	}
	if (c)
		return c->run(&ctl, argc, argv);
	fprintf(stderr, "kmeshctl: unknown command '%s' (see --help)\n", cmd);
	return 2;
}
