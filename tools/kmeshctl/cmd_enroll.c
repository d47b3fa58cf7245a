/* cmd_enroll.c — `kmeshctl enroll|unenroll [NETNS]`: put a network namespace into the mesh, or
 * take it out, through the map writer's socket as the CNI plugin does (role cni). For machines
 * without Kubernetes, where no CNI plugin runs: a VM enrolls its own namespace. */
#include "tools/kmeshctl/commands.h"

#include <stdlib.h>
#include <string.h>

#include "shared/netns.h"

#define HOST_NETNS "/proc/1/ns/net"

static const char usage[] =
	"usage: kmeshctl enroll|unenroll [NETNS] [--name NAME]\n"
	"  enroll: connections made in the network namespace NETNS (default " HOST_NETNS ", this\n"
	"  machine's own) go through the mesh: VIPs are balanced, waypoints and policies apply.\n"
	"  unenroll takes it out again. Through the map writer's socket, as the CNI plugin enrolls a\n"
	"  pod (root, or a uid the map writer allows the cni role). NAME is shown in its logs.\n";

int km_cmd_enroll(const struct km_ctl *ctl, int argc, char **argv, int enroll)
{
	const char *netns = HOST_NETNS, *name = NULL;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep = NULL;
	Kmesh__Ipc__Enroll e = KMESH__IPC__ENROLL__INIT;
	Kmesh__Ipc__Unenroll u = KMESH__IPC__UNENROLL__INIT;
	struct km_addr addrs[KM_ENROLL_MAX_ADDRS];
	struct km_enroll_addrs buf;
	struct km_sync_client cl;
	Kmesh__Ipc__Code code;
	char err[512] = "", msg[256] = "";
	uint64_t cookie;
	size_t n = 0;
	int got_netns = 0, rc;

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	for (int a = 0; a < argc; a++) {
		if (!strcmp(argv[a], "--name") && a + 1 < argc)
			name = argv[++a];
		else if (argv[a][0] != '-' && !got_netns && strlen(argv[a]) < 128)
			netns = argv[a], got_netns = 1;
		else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (km_netns_identity(netns, &cookie, addrs, KM_ENROLL_MAX_ADDRS, &n, err, sizeof(err)) != 0) {
		fprintf(stderr, "kmeshctl: %s\n", err);
		return 1;
	}
	if (enroll) {
		km_msg_enroll_set(&e, &buf, cookie, addrs, n);
		e.pod = (char *)(name ? name : netns);
		e.netns_path = (char *)netns;
		req.body_case = KMESH__IPC__ENVELOPE__BODY_ENROLL;
		req.enroll = &e;
	} else {
		u.netns_cookie = cookie;
		u.pod = (char *)(name ? name : netns);
		req.body_case = KMESH__IPC__ENVELOPE__BODY_UNENROLL;
		req.unenroll = &u;
	}
	rc = km_sync_connect(&cl, ctl->socket[KM_PROC_MAP_WRITER], KMESH__IPC__ROLE__ROLE_CNI, "kmeshctl",
			     ctl->timeout_ms, &code, msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, "kmeshctl: cannot reach kmesh-map-writer at %s as the cni role: %s%s%s\n",
			ctl->socket[KM_PROC_MAP_WRITER], strerror(-rc), *msg ? ": " : "", msg);
		return 1;
	}
	rc = km_sync_call(&cl, &req, &rep);
	km_sync_close(&cl);
	if (rc) {
		fprintf(stderr, "kmeshctl: %s: %s\n", enroll ? "enroll" : "unenroll", strerror(-rc));
		return 1;
	}
	rc = rep->reply->code == KMESH__IPC__CODE__OK;
	if (!rc)
		fprintf(stderr, "kmeshctl: %s %s: %s: %s\n", enroll ? "enroll" : "unenroll", netns,
			km_msg_code_name(rep->reply->code), rep->reply->message);
	else if (ctl->format == KM_OUT_TABLE)
		printf("%s %s (netns cookie %llu, %zu addresses)\n", enroll ? "enrolled" : "unenrolled",
		       netns, (unsigned long long)cookie, enroll ? n : 0);
	else { /* -o json|yaml: the same facts, to parse */
		json_t *doc = json_pack("{s:s, s:s, s:I, s:I}", "action",
					enroll ? "enrolled" : "unenrolled", "netns", netns,
					"netns_cookie", (json_int_t)cookie, "addresses",
					(json_int_t)(enroll ? n : 0));

		km_out_print(stdout, doc, ctl->format);
		json_decref(doc);
	}
	km_msg_free(rep);
	return rc ? 0 : 1;
}
