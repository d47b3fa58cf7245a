/* main.c — kmesh-cni: the CNI plugin a container runtime runs (CNI_COMMAND set). A thin client
 * of the node's CNI agent (kmesh-cni-agent), which installs it; linked statically. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "services/cni-plugin/cni_output.h"
#include "services/cni-plugin/cni_state.h"
#include "services/cni-plugin/invocation.h"
#include "services/cni-plugin/netconf.h"
#include "services/cni-plugin/plugin.h"
#include "shared/log.h"
#include "shared/version.h"

#define KM_CNI_LOG_ROTATE_BYTES (10u << 20)

static const char *const plugin_help =
	"Usage: kmesh-cni                      (run by the container runtime: CNI_COMMAND set)\n"
	"       kmesh-cni --version | --help\n\n"
	"A chained CNI plugin (spec 1.0.0; also 0.3.0, 0.3.1, 0.4.0): after the cluster's primary\n"
	"plugin has set up a pod, it reads the pod's network namespace and asks the node's CNI\n"
	"agent (kmesh-cni-agent, which installs this plugin) to enroll it if the pod belongs in\n"
	"the mesh. Its keys in the conflist entry: agentSocket, failPolicy (open|closed),\n"
	"stateDir, logFile, logLevel, timeoutMs. See docs/cni.md.\n";

/* Reads all of stdin, at most max + 1 bytes (one more tells "too large"). */
static char *read_stdin(size_t max, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		ssize_t r;

		if (n == cap) {
			char *nb = cap > max ? NULL : realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(0, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			*len = n;
			return buf;
		}
		n += (size_t)r;
	}
	*len = n;
	return buf;
}

/* Log lines go to the configured file (stdout carries the result); rotated at 10 MiB. */
static void open_log(const struct km_cni_netconf *nc)
{
	enum km_log_level level;
	struct stat st;
	char old[4200], why[256];
	int fd;

	if (km_log_parse_level(nc->log_level, &level) == 0)
		km_log_set_level(level);
	if (!strcmp(nc->log_file, "stderr"))
		return;
	if (km_cni_state_init(nc->state_dir, why, sizeof(why)) != 0)
		km_warn("%s", why);
	fd = open(nc->log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		km_warn("cannot open the log file %s: %s; logging to stderr", nc->log_file,
			strerror(errno));
		return;
	}
	/* rotate under a lock on the file itself, and only if the name still means this file:
	 * two plugins running at once rotate once, never over the older .1 */
	if (fstat(fd, &st) == 0 && st.st_size > KM_CNI_LOG_ROTATE_BYTES && flock(fd, LOCK_EX) == 0) {
		struct stat now;

		if (stat(nc->log_file, &now) == 0 && now.st_ino == st.st_ino) {
			snprintf(old, sizeof(old), "%s.1", nc->log_file);
			rename(nc->log_file, old);
		}
		flock(fd, LOCK_UN);
		close(fd);
		fd = open(nc->log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return;
	}
	dup2(fd, 2);
	close(fd);
}

static int run_plugin(void)
{
	struct km_cni_invocation inv;
	struct km_cni_netconf nc = { 0 };
	struct km_cni_error e = { 0 };
	size_t len = 0;
	char *in;
	int rc = -1;

	if (km_cni_invocation_from_env(&inv, &e) == 0 && inv.command == KM_CNI_VERSION) {
		km_cni_print_version(stdout);
		return 0;
	}
	in = e.code ? NULL : read_stdin(KM_CNI_MAX_CONFIG, &len);
	if (!e.code && !in)
		km_cni_fail(&e, KM_CNI_E_IO, "cannot read stdin", "out of memory");
	if (!e.code && km_cni_netconf_parse(in, len, &nc, &e) == 0) {
		open_log(&nc);
		rc = km_cni_run(&inv, &nc, stdout, &e);
	}
	if (rc != 0) {
		km_error("%s %s/%s (container %s): %s: %s",
			 e.code == KM_CNI_E_ENV ? getenv("CNI_COMMAND") ?: "-"
						: km_cni_command_name(inv.command),
			 inv.pod_namespace, inv.pod_name, inv.container_id, e.msg, e.details);
		km_cni_print_error(stdout, nc.cni_version, &e);
	}
	km_cni_netconf_free(&nc);
	free(in);
	return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	km_log_init("kmesh-cni");
	if (argc > 1 && (!strcmp(argv[1], "install") || !strcmp(argv[1], "uninstall"))) {
		fprintf(stderr, "kmesh-cni: '%s' moved to the node's CNI agent: run kmesh-cni-agent %s\n",
			argv[1], argv[1]);
		return 2;
	}
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(plugin_help, stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("kmesh-cni %s, CNI spec %s (supports 0.3.0, 0.3.1, 0.4.0, 1.0.0)\n",
		       km_version(), KM_CNI_SPEC_VERSION);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "kmesh-cni: unknown argument '%s' (see --help)\n", argv[1]);
		return 2;
	}
	return run_plugin();
}
