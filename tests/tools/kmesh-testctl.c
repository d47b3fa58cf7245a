/* kmesh-testctl.c — a test and demo helper that talks to the map writer as a real peer:
 *   enroll   --socket S --netns PATH [--pod NAME] [--host-ifindex N] [--tell-path no]
 *                                                    enroll a network namespace (CNI role);
 *                                                    --tell-path no leaves its path out
 *   unenroll --socket S --netns PATH                 unenroll it
 *   dump     --socket S --table NAME                 print a table, one row per line (admin role)
 *   hello    --socket S --role ROLE                  exit 0 if accepted, 3 if refused
 *   abuse    --socket S                              garbage and oversize frames must be handled
 *   agent-dump --socket S                            an agent's state as JSON (xDS or IPsec)
 *   ipsec-peer --socket S --name N --spi N --addrs A[,A] --boot-id B [--cidrs C[,C]]
 *                                                    tell the IPsec agent of a peer node
 *   ipsec-peer-gone --socket S --name N              ... that it left
 *   log-level --socket S --level L                   set any daemon's log level (admin role)
 *   ipsec-dataplane --socket S --state on --addrs A[,A] | --state off  [--role R]
 *                                                    the map writer's IPsec tc programs (ipsec role)
 * Not a product command: kmeshctl and the CNI plugin take these jobs over. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipc/client_sync.h"
#include "shared/addr.h"
#include "shared/netns.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

struct args {
	const char *cmd, *socket, *netns, *pod, *table, *role;
	const char *name, *spi, *addrs, *boot_id, *cidrs, *level, *host_ifindex, *state, *tell_path;
};

static int usage(void)
{
	fprintf(stderr,
		"usage: kmesh-testctl enroll|unenroll --socket S --netns PATH [--pod NAME] [--host-ifindex N] [--tell-path no]\n"
		"       kmesh-testctl dump --socket S --table manage|frontend|service|endpoint|backend|port_override|authz_stats|ipsec_peer|ipsec_cidr\n"
		"       kmesh-testctl hello --socket S --role xds|cni|admin|ipsec\n"
		"       kmesh-testctl abuse --socket S\n"
		"       kmesh-testctl agent-dump --socket S\n"
		"       kmesh-testctl ipsec-peer --socket S --name N --spi N --addrs A[,A] --boot-id B [--cidrs C[,C]]\n"
		"       kmesh-testctl ipsec-peer-gone --socket S --name N\n"
		"       kmesh-testctl log-level --socket S --level error|warn|info|debug\n"
		"       kmesh-testctl ipsec-dataplane --socket S --state on --addrs A[,A] | --state off\n");
	return 2;
}

static Kmesh__Ipc__Role role_of(const char *s)
{
	if (!strcmp(s, "xds"))
		return KMESH__IPC__ROLE__ROLE_XDS;
	if (!strcmp(s, "cni"))
		return KMESH__IPC__ROLE__ROLE_CNI;
	if (!strcmp(s, "admin"))
		return KMESH__IPC__ROLE__ROLE_ADMIN;
	if (!strcmp(s, "ipsec"))
		return KMESH__IPC__ROLE__ROLE_IPSEC;
	return KMESH__IPC__ROLE__ROLE_UNSPECIFIED;
}

static int connect_as(struct km_sync_client *cl, const char *socket, Kmesh__Ipc__Role role)
{
	Kmesh__Ipc__Code code;
	char msg[256];
	int err = km_sync_connect(cl, socket, role, "kmesh-testctl", 5000, &code, msg, sizeof(msg));

	if (err)
		fprintf(stderr, "kmesh-testctl: hello as %s: %s%s%s\n", km_msg_role_name(role),
			strerror(-err), *msg ? ": " : "", msg);
	return err;
}

/* Send req, wait for the reply, close. Returns 0, or 1 after saying why. */
static int call_and_close(struct km_sync_client *cl, km_envelope *req, km_envelope **rep)
{
	int err = km_sync_call(cl, req, rep);

	km_sync_close(cl);
	if (err)
		fprintf(stderr, "kmesh-testctl: %s\n", strerror(-err));
	return err ? 1 : 0;
}

static int reply_status(km_envelope *rep, const char *what)
{
	int ok = rep->reply->code == KMESH__IPC__CODE__OK;

	if (!ok)
		fprintf(stderr, "kmesh-testctl: %s: %s: %s\n", what, km_msg_code_name(rep->reply->code),
			rep->reply->message);
	km_msg_free(rep);
	return ok ? 0 : 1;
}

static int cmd_enroll(const struct args *a, int enroll)
{
	struct km_sync_client cl;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__Enroll e = KMESH__IPC__ENROLL__INIT;
	Kmesh__Ipc__Unenroll u = KMESH__IPC__UNENROLL__INIT;
	struct km_addr addrs[KM_ENROLL_MAX_ADDRS];
	struct km_enroll_addrs buf;
	uint64_t cookie;
	char why[512];
	size_t n;

	/* Connect first, from this process's own netns (the socket path lives there). */
	if (connect_as(&cl, a->socket, KMESH__IPC__ROLE__ROLE_CNI))
		return 1;
	if (km_netns_identity(a->netns, &cookie, addrs, KM_ENROLL_MAX_ADDRS, &n, why, sizeof(why)) != 0) {
		fprintf(stderr, "kmesh-testctl: %s\n", why);
		km_sync_close(&cl);
		return 1;
	}
	if (enroll) {
		km_msg_enroll_set(&e, &buf, cookie, addrs, n);
		e.pod = (char *)(a->pod ? a->pod : a->netns);
		e.netns_path = (char *)(a->tell_path && !strcmp(a->tell_path, "no") ? "" : a->netns);
		e.host_ifindex = a->host_ifindex ? (uint32_t)strtoul(a->host_ifindex, NULL, 10) : 0;
		req.body_case = KMESH__IPC__ENVELOPE__BODY_ENROLL;
		req.enroll = &e;
	} else {
		u.netns_cookie = cookie;
		u.pod = (char *)(a->pod ? a->pod : a->netns);
		req.body_case = KMESH__IPC__ENVELOPE__BODY_UNENROLL;
		req.unenroll = &u;
	}
	if (call_and_close(&cl, &req, &rep))
		return 1;
	if (reply_status(rep, enroll ? "enroll" : "unenroll"))
		return 1;
	printf("%s netns %s cookie %llu\n", enroll ? "enrolled" : "unenrolled", a->netns,
	       (unsigned long long)cookie);
	return 0;
}

static void print_row(const Kmesh__Ipc__TableOp *op)
{
	char buf[KM_ADDR_STRLEN];
	struct km_addr addr;

	switch (op->row_case) {
	case KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER:
		km_addr_from_bytes(op->ipsec_peer->address.data, op->ipsec_peer->address.len, &addr);
		printf("ipsec_peer %s id %u\n", km_addr_format(&addr, buf), op->ipsec_peer->peer_id);
		break;
	case KMESH__IPC__TABLE_OP__ROW_IPSEC_CIDR:
		km_addr_from_bytes(op->ipsec_cidr->address.data, op->ipsec_cidr->address.len, &addr);
		printf("ipsec_cidr %s/%u peer %u\n", km_addr_format(&addr, buf), op->ipsec_cidr->length,
		       op->ipsec_cidr->peer_id);
		break;
	case KMESH__IPC__TABLE_OP__ROW_FRONTEND:
		km_addr_from_bytes(op->frontend->address.data, op->frontend->address.len, &addr);
		printf("frontend %s port %u proto %u kind %s upstream %u target %u flags %u",
		       km_addr_format(&addr, buf), op->frontend->port, op->frontend->protocol,
		       op->frontend->kind == KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_SERVICE ? "service"
											   : "workload",
		       op->frontend->upstream_id, op->frontend->target_port, op->frontend->flags);
		if (op->frontend->pick_count)
			printf(" pick %u+%u\n", op->frontend->pick_base, op->frontend->pick_count);
		else
			printf(" pick -\n");
		break;
	case KMESH__IPC__TABLE_OP__ROW_SERVICE:
		printf("service %u mode %u flags %u count", op->service->id, (unsigned)op->service->lb_mode,
		       op->service->flags);
		for (size_t p = 0; p < op->service->n_endpoint_count; p++)
			printf(" %u", op->service->endpoint_count[p]);
		printf(" totals");
		for (size_t p = 0; p < op->service->n_weight_total; p++)
			printf(" %llu", (unsigned long long)op->service->weight_total[p]);
		if (op->service->waypoint_port)
			printf(" waypoint port %u data %u", op->service->waypoint_port,
			       op->service->waypoint_data_port);
		printf(" slots");
		for (size_t p = 0; p < op->service->n_slot_base; p++)
			if (op->service->slot_base[p] == 0xffffffffu)
				printf(" -");
			else
				printf(" %u", op->service->slot_base[p]);
		printf("\n");
		break;
	case KMESH__IPC__TABLE_OP__ROW_ENDPOINT:
		printf("endpoint service %u prio %u index %u backend %u cum %llu addr4 %u.%u.%u.%u\n",
		       op->endpoint->service_id, op->endpoint->priority, op->endpoint->index,
		       op->endpoint->backend_id, (unsigned long long)op->endpoint->cum_weight,
		       op->endpoint->addr4 & 0xff, (op->endpoint->addr4 >> 8) & 0xff,
		       (op->endpoint->addr4 >> 16) & 0xff, op->endpoint->addr4 >> 24);
		break;
	case KMESH__IPC__TABLE_OP__ROW_BACKEND:
		printf("backend %u", op->backend->id);
		for (size_t i = 0; i < op->backend->n_addresses; i++) {
			km_addr_from_bytes(op->backend->addresses[i].data, op->backend->addresses[i].len,
					   &addr);
			printf(" %s", km_addr_format(&addr, buf));
		}
		printf("\n");
		break;
	case KMESH__IPC__TABLE_OP__ROW_PORT_OVERRIDE:
		printf("port_override service %u backend %u port %u target %u\n",
		       op->port_override->service_id, op->port_override->backend_id,
		       op->port_override->port, op->port_override->target_port);
		break;
	default:
		break;
	}
}

static int cmd_dump(const struct args *a)
{
	static const char *const names[] = { "", "manage", "frontend", "service", "endpoint", "backend",
					     "port_override", "authz_stats", "ipsec_peer", "ipsec_cidr" };
	struct km_sync_client cl;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__DumpRequest d = KMESH__IPC__DUMP_REQUEST__INIT;

	for (int t = 1; t < (int)(sizeof(names) / sizeof(names[0])); t++)
		if (!strcmp(a->table, names[t]))
			d.table = (Kmesh__Ipc__Table)t;
	if (!d.table)
		return usage();
	if (connect_as(&cl, a->socket, KMESH__IPC__ROLE__ROLE_ADMIN))
		return 1;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_DUMP;
	req.dump = &d;
	if (call_and_close(&cl, &req, &rep))
		return 1;
	if (rep->reply->code == KMESH__IPC__CODE__OK && rep->reply->dump) {
		for (size_t i = 0; i < rep->reply->dump->n_manage; i++)
			printf("manage cookie %llu host_ifindex %u netns %s\n",
			       (unsigned long long)rep->reply->dump->manage[i]->netns_cookie,
			       rep->reply->dump->manage[i]->host_ifindex,
			       *rep->reply->dump->manage[i]->netns_path
				       ? rep->reply->dump->manage[i]->netns_path : "-");
		for (size_t i = 0; i < rep->reply->dump->n_authz_stats; i++)
			printf("authz_stat %u allowed %llu denied %llu\n",
			       rep->reply->dump->authz_stats[i]->stat_id,
			       (unsigned long long)rep->reply->dump->authz_stats[i]->allowed,
			       (unsigned long long)rep->reply->dump->authz_stats[i]->denied);
		for (size_t i = 0; i < rep->reply->dump->n_rows; i++)
			print_row(rep->reply->dump->rows[i]);
		if (rep->reply->dump->stats) {
			const Kmesh__Ipc__TableStats *st = rep->reply->dump->stats;

			printf("stats ops_applied %llu ops_refused %llu table_full %llu rows_swept %llu "
			       "migrated_entries %llu authz_rechecks %llu authz_closed %llu ipsec_on %d "
			       "ipsec_interfaces %u ipsec_pods %u ipsec_pods_uncovered %u "
			       "ipsec_tc_failures %llu slots %llu slots_free %llu slots_quarantined %llu "
			       "slot_ranges_grown %llu slot_ranges_refused %llu frontend_pick_rewrites %llu "
			       "frontend_pick_rewrites_failed %llu frontend_picks_off %d\n",
			       (unsigned long long)st->ops_applied, (unsigned long long)st->ops_refused,
			       (unsigned long long)st->table_full, (unsigned long long)st->rows_swept,
			       (unsigned long long)st->migrated_entries,
			       (unsigned long long)st->authz_rechecks, (unsigned long long)st->authz_closed,
			       st->ipsec_on, st->ipsec_interfaces, st->ipsec_pods,
			       st->ipsec_pods_uncovered, (unsigned long long)st->ipsec_tc_failures,
			       (unsigned long long)st->slots, (unsigned long long)st->slots_free,
			       (unsigned long long)st->slots_quarantined,
			       (unsigned long long)st->slot_ranges_grown,
			       (unsigned long long)st->slot_ranges_refused,
			       (unsigned long long)st->frontend_pick_rewrites,
			       (unsigned long long)st->frontend_pick_rewrites_failed,
			       st->frontend_picks_off);
		}
	}
	return reply_status(rep, "dump");
}

static int cmd_hello(const struct args *a)
{
	struct km_sync_client cl;
	Kmesh__Ipc__Code code;
	char msg[256];
	int err = km_sync_connect(&cl, a->socket, role_of(a->role), "kmesh-testctl", 5000, &code, msg,
				  sizeof(msg));

	if (err == -EACCES) {
		printf("refused: %s\n", msg);
		return 3;
	}
	if (err) {
		fprintf(stderr, "kmesh-testctl: %s %s\n", strerror(-err), msg);
		return 1;
	}
	km_sync_close(&cl);
	printf("accepted as %s\n", a->role);
	return 0;
}

/* Raw frames: a garbage payload gets a BAD_REQUEST reply on a connection that stays usable;
 * an oversize length closes the connection; the server keeps serving others. */
static int cmd_abuse(const struct args *a)
{
	struct km_sync_client cl;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__DumpRequest d = KMESH__IPC__DUMP_REQUEST__INIT;
	uint8_t frame[KM_FRAME_HEADER + 8] = { 0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t big[KM_FRAME_HEADER] = { 0x7f, 0xff, 0xff, 0xff };
	uint8_t hdr[KM_FRAME_HEADER], buf[4096];
	ssize_t n;

	if (connect_as(&cl, a->socket, KMESH__IPC__ROLE__ROLE_ADMIN))
		return 1;
	if (write(cl.fd, frame, sizeof(frame)) != (ssize_t)sizeof(frame) ||
	    read(cl.fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr)) {
		fprintf(stderr, "abuse: no reply to a garbage frame\n");
		return 1;
	}
	n = read(cl.fd, buf, sizeof(buf));
	rep = n > 0 ? km_msg_unpack(buf, (size_t)n) : NULL;
	if (!rep || rep->body_case != KMESH__IPC__ENVELOPE__BODY_REPLY ||
	    rep->reply->code != KMESH__IPC__CODE__BAD_REQUEST) {
		fprintf(stderr, "abuse: garbage frame was not answered with BAD_REQUEST\n");
		return 1;
	}
	printf("garbage frame: %s: %s\n", km_msg_code_name(rep->reply->code), rep->reply->message);
	km_msg_free(rep);
	d.table = KMESH__IPC__TABLE__TABLE_SERVICE;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_DUMP;
	req.dump = &d;
	if (km_sync_call(&cl, &req, &rep) != 0) {
		fprintf(stderr, "abuse: the connection did not survive a garbage frame\n");
		return 1;
	}
	km_msg_free(rep);
	printf("connection still usable after garbage\n");
	if (write(cl.fd, big, sizeof(big)) != (ssize_t)sizeof(big))
		return 1;
	n = read(cl.fd, buf, sizeof(buf));
	if (n != 0) {
		fprintf(stderr, "abuse: an oversize frame did not close the connection (read %zd)\n", n);
		return 1;
	}
	printf("oversize frame: connection closed by the server\n");
	km_sync_close(&cl);
	if (connect_as(&cl, a->socket, KMESH__IPC__ROLE__ROLE_ADMIN))
		return 1;
	km_sync_close(&cl);
	printf("server still accepts new peers\n");
	return 0;
}

static int cmd_agent_dump(const struct args *a)
{
	struct km_sync_client cl;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__AgentDumpRequest d = KMESH__IPC__AGENT_DUMP_REQUEST__INIT;
	const char *items = getenv("KM_DUMP_ITEMS"); /* lists kept short when polling */

	d.max_items = items ? (uint32_t)atoi(items) : 0;
	if (connect_as(&cl, a->socket, KMESH__IPC__ROLE__ROLE_ADMIN))
		return 1;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_AGENT_DUMP;
	req.agent_dump = &d;
	if (call_and_close(&cl, &req, &rep))
		return 1;
	if (rep->reply->body_case == KMESH__IPC__REPLY__BODY_JSON)
		printf("%s\n", rep->reply->json);
	return reply_status(rep, "agent-dump");
}

/* "a,b" split in place into at most 8 strings. */
static size_t split_list(char *text, char **out)
{
	size_t n = 0;

	for (char *save = NULL, *t = strtok_r(text, ",", &save); t && n < 8; t = strtok_r(NULL, ",", &save))
		out[n++] = t;
	return n;
}

static int cmd_ipsec_peer(const struct args *a, int gone)
{
	struct km_sync_client cl;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__IpsecNode n = KMESH__IPC__IPSEC_NODE__INIT;
	Kmesh__Ipc__IpsecPeerGone g = KMESH__IPC__IPSEC_PEER_GONE__INIT;
	char abuf[512], cbuf[512], *addrs[8], *cidrs[8];

	if (gone) {
		g.name = (char *)a->name;
		req.body_case = KMESH__IPC__ENVELOPE__BODY_IPSEC_PEER_GONE;
		req.ipsec_peer_gone = &g;
	} else {
		snprintf(abuf, sizeof(abuf), "%s", a->addrs ? a->addrs : "");
		snprintf(cbuf, sizeof(cbuf), "%s", a->cidrs ? a->cidrs : "");
		n.name = (char *)a->name;
		n.spi = a->spi ? (uint32_t)strtoul(a->spi, NULL, 10) : 0;
		n.addresses = addrs;
		n.n_addresses = split_list(abuf, addrs);
		n.pod_cidrs = cidrs;
		n.n_pod_cidrs = split_list(cbuf, cidrs);
		n.boot_id = (char *)(a->boot_id ? a->boot_id : "");
		req.body_case = KMESH__IPC__ENVELOPE__BODY_IPSEC_PEER;
		req.ipsec_peer = &n;
	}
	if (connect_as(&cl, a->socket, KMESH__IPC__ROLE__ROLE_ADMIN))
		return 1;
	if (call_and_close(&cl, &req, &rep))
		return 1;
	if (rep->reply->message && *rep->reply->message)
		printf("%s\n", rep->reply->message);
	return reply_status(rep, gone ? "ipsec-peer-gone" : "ipsec-peer");
}

static int cmd_ipsec_dataplane(const struct args *a)
{
	struct km_sync_client cl;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__IpsecDataplane d = KMESH__IPC__IPSEC_DATAPLANE__INIT;
	char abuf[512], *texts[8];
	ProtobufCBinaryData bytes[8];
	uint8_t raw[8][16];

	d.enabled = !strcmp(a->state, "on");
	snprintf(abuf, sizeof(abuf), "%s", a->addrs ? a->addrs : "");
	d.n_node_addresses = split_list(abuf, texts);
	for (size_t i = 0; i < d.n_node_addresses; i++) {
		struct km_addr addr;

		if (km_addr_parse(texts[i], &addr) != 0)
			return usage();
		bytes[i].len = km_addr_to_bytes(&addr, raw[i]);
		bytes[i].data = raw[i];
	}
	d.node_addresses = bytes;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_IPSEC_DATAPLANE;
	req.ipsec_dataplane = &d;
	if (connect_as(&cl, a->socket, a->role ? role_of(a->role) : KMESH__IPC__ROLE__ROLE_IPSEC))
		return 1;
	if (call_and_close(&cl, &req, &rep))
		return 1;
	if (rep->reply->message && *rep->reply->message)
		printf("%s\n", rep->reply->message);
	return reply_status(rep, "ipsec-dataplane");
}

static int cmd_log_level(const struct args *a)
{
	struct km_sync_client cl;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__SetLogLevel l = KMESH__IPC__SET_LOG_LEVEL__INIT;

	l.level = (char *)a->level;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_SET_LOG_LEVEL;
	req.set_log_level = &l;
	if (connect_as(&cl, a->socket, KMESH__IPC__ROLE__ROLE_ADMIN))
		return 1;
	if (call_and_close(&cl, &req, &rep))
		return 1;
	return reply_status(rep, "log-level");
}

int main(int argc, char **argv)
{
	struct args a = { 0 };

	if (argc < 2)
		return usage();
	a.cmd = argv[1];
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--socket"))
			a.socket = argv[i + 1];
		else if (!strcmp(argv[i], "--netns"))
			a.netns = argv[i + 1];
		else if (!strcmp(argv[i], "--pod"))
			a.pod = argv[i + 1];
		else if (!strcmp(argv[i], "--tell-path"))
			a.tell_path = argv[i + 1];
		else if (!strcmp(argv[i], "--table"))
			a.table = argv[i + 1];
		else if (!strcmp(argv[i], "--role"))
			a.role = argv[i + 1];
		else if (!strcmp(argv[i], "--name"))
			a.name = argv[i + 1];
		else if (!strcmp(argv[i], "--spi"))
			a.spi = argv[i + 1];
		else if (!strcmp(argv[i], "--addrs"))
			a.addrs = argv[i + 1];
		else if (!strcmp(argv[i], "--boot-id"))
			a.boot_id = argv[i + 1];
		else if (!strcmp(argv[i], "--cidrs"))
			a.cidrs = argv[i + 1];
		else if (!strcmp(argv[i], "--level"))
			a.level = argv[i + 1];
		else if (!strcmp(argv[i], "--host-ifindex"))
			a.host_ifindex = argv[i + 1];
		else if (!strcmp(argv[i], "--state"))
			a.state = argv[i + 1];
		else
			return usage();
	}
	if (!a.socket)
		return usage();
	if ((!strcmp(a.cmd, "enroll") || !strcmp(a.cmd, "unenroll")) && a.netns)
		return cmd_enroll(&a, !strcmp(a.cmd, "enroll"));
	if (!strcmp(a.cmd, "dump") && a.table)
		return cmd_dump(&a);
	if (!strcmp(a.cmd, "hello") && a.role)
		return cmd_hello(&a);
	if (!strcmp(a.cmd, "abuse"))
		return cmd_abuse(&a);
	if (!strcmp(a.cmd, "agent-dump"))
		return cmd_agent_dump(&a);
	if (!strcmp(a.cmd, "ipsec-dataplane") && a.state)
		return cmd_ipsec_dataplane(&a);
	if (!strcmp(a.cmd, "log-level") && a.level)
		return cmd_log_level(&a);
	if ((!strcmp(a.cmd, "ipsec-peer") || !strcmp(a.cmd, "ipsec-peer-gone")) && a.name)
		return cmd_ipsec_peer(&a, !strcmp(a.cmd, "ipsec-peer-gone"));
	return usage();
}
