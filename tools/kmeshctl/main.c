/* main.c — kmeshctl: operate kmesh on this node. Global flags, then one command family (one
 * file each: cmd_version.c, cmd_log.c, cmd_dump.c), which prints through output.h. The local
 * processes are reached on their Unix sockets (procs.c) as the admin role. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/version.h"
#include "tools/kmeshctl/commands.h"

static const char usage[] =
	"usage: kmeshctl [OPTIONS] COMMAND [ARGS]\n"
	"\n"
	"Commands:\n"
	"  version            kmeshctl's version and every running process's\n"
	"  log                log levels of the processes; --set PROCESS:LEVEL changes one\n"
	"  dump               tables | xds | policies | ipsec: the state of a process\n"
	"  COMMAND --help     a command's own usage\n"
	"\n"
	"Options:\n"
	"  -o, --output FORMAT         table (default), json or yaml\n"
	"  --map-writer-socket PATH    [env KMESH_MAP_WRITER_SOCKET] (default /run/kmesh/map-writer.sock)\n"
	"  --xds-socket PATH           [env KMESH_XDS_SOCKET] (default /run/kmesh/xds-agent.sock)\n"
	"  --ipsec-socket PATH         [env KMESH_IPSEC_SOCKET] (default /run/kmesh/ipsec-agent.sock)\n"
	"  --timeout-ms MS             per request (default 5000)\n"
	"  --version                   kmeshctl's version\n"
	"  -h, --help                  this help\n";

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

int main(int argc, char **argv)
{
	struct km_ctl ctl = {
		.socket = { env_or("KMESH_MAP_WRITER_SOCKET", "/run/kmesh/map-writer.sock"),
			    env_or("KMESH_XDS_SOCKET", "/run/kmesh/xds-agent.sock"),
			    env_or("KMESH_IPSEC_SOCKET", "/run/kmesh/ipsec-agent.sock") },
		.format = KM_OUT_TABLE,
		.timeout_ms = 5000,
	};
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *eq = strchr(a, '=');
		static const char *const takes_value[] = { "-o", "--output", "--map-writer-socket",
							   "--xds-socket", "--ipsec-socket",
							   "--timeout-ms", NULL };
		char flag[64];
		int known = 0, inline_value = 0;

		if (eq && !strncmp(a, "--", 2) && (size_t)(eq - a) < sizeof(flag)) { /* --flag=value */
			snprintf(flag, sizeof(flag), "%.*s", (int)(eq - a), a);
			a = flag;
			v = eq + 1;
			inline_value = 1;
		}
		for (int k = 0; takes_value[k]; k++)
			known |= !strcmp(a, takes_value[k]);
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		}
		if (!strcmp(a, "--version")) {
			printf("kmeshctl %s\n", km_version());
			return 0;
		}
		if (!known) {
			fprintf(stderr, "kmeshctl: unknown option '%s' (see --help)\n", argv[i]);
			return 2;
		}
		if (!v) {
			fprintf(stderr, "kmeshctl: %s needs a value (see --help)\n", a);
			return 2;
		}
		if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (km_out_parse(v, &ctl.format) != 0) {
				fprintf(stderr, "kmeshctl: output '%s' is not table, json or yaml\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--map-writer-socket")) {
			ctl.socket[KM_PROC_MAP_WRITER] = v;
		} else if (!strcmp(a, "--xds-socket")) {
			ctl.socket[KM_PROC_XDS_AGENT] = v;
		} else if (!strcmp(a, "--ipsec-socket")) {
			ctl.socket[KM_PROC_IPSEC_AGENT] = v;
		} else if (!strcmp(a, "--timeout-ms")) {
			char *end;
			long ms = strtol(v, &end, 10);

			if (!*v || *end || ms < 1 || ms > 600000) {
				fprintf(stderr, "kmeshctl: --timeout-ms must be 1 to 600000\n");
				return 2;
			}
			ctl.timeout_ms = (int)ms;
		}
		if (!inline_value)
			i++;
	}
	if (i == argc) {
		fputs(usage, stderr);
		return 2;
	}
	if (!strcmp(argv[i], "version"))
		return km_cmd_version(&ctl, argc - i - 1, argv + i + 1);
	if (!strcmp(argv[i], "log"))
		return km_cmd_log(&ctl, argc - i - 1, argv + i + 1);
	if (!strcmp(argv[i], "dump"))
		return km_cmd_dump(&ctl, argc - i - 1, argv + i + 1);
	fprintf(stderr, "kmeshctl: unknown command '%s' (see --help)\n", argv[i]);
	return 2;
}
