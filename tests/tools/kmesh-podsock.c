/* kmesh-podsock.c — asks the map writer for sockets inside an enrolled pod (PodSockets, as the
 * tunnel does) and shows what came, for tests/integration/pod_sockets_test.sh:
 *   kmesh-podsock --socket S --netns PATH|--cookie C [--role tunnel] [--listen PORT] [--connect N]
 *                 [--family 4|6] [--accept] [--connect-to IP:PORT]
 * Prints "reply CODE applied N: MESSAGE", then a line per socket received: "listener cookie C
 * port P" or "socket cookie C family F" (the netns cookie each was made in); with --accept it
 * accepts one connection on the listener within 5 s ("accepted from IP:PORT", answering
 * "hello\n"); with --connect-to it connects the first socket there ("connected from IP:PORT",
 * printing the first line it reads). Exit 0 when the reply was OK. Not a product command. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/client_sync.h"
#include "shared/netns.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

static const char *peer_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		if (!strncmp(ip, "::ffff:", 7))
			memmove(ip, ip + 7, strlen(ip + 7) + 1);
		port = ntohs(a->sin6_port);
	}
	snprintf(buf, len, "%s:%u", ip, port);
	return buf;
}

static int wait_for(int fd, short ev)
{
	struct pollfd p = { fd, ev, 0 };

	return poll(&p, 1, 5000) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *netns = NULL, *role = "tunnel", *connect_to = NULL;
	int accept_one = 0, fds[64], rc = 1;
	Kmesh__Ipc__PodSockets ps = KMESH__IPC__POD_SOCKETS__INIT;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep = NULL;
	struct km_sync_client cl;
	Kmesh__Ipc__Code code;
	char msg[256], err[256];

	ps.family = 4;
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(argv[i], "--accept"))
			accept_one = 1;
		else if (!strcmp(argv[i], "--socket") && ++i)
			sock = v;
		else if (!strcmp(argv[i], "--netns") && ++i)
			netns = v;
		else if (!strcmp(argv[i], "--cookie") && ++i)
			ps.netns_cookie = strtoull(v, NULL, 10);
		else if (!strcmp(argv[i], "--role") && ++i)
			role = v;
		else if (!strcmp(argv[i], "--listen") && ++i)
			ps.listen_port = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "--connect") && ++i)
			ps.connect = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "--family") && ++i)
			ps.family = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "--connect-to") && ++i)
			connect_to = v;
		else
			goto usage;
	}
	if (!sock || (!netns && !ps.netns_cookie))
		goto usage;
	if (netns && km_netns_cookie(netns, &ps.netns_cookie, err, sizeof(err)) != 0) {
		fprintf(stderr, "kmesh-podsock: %s\n", err);
		return 1;
	}
	if (km_sync_connect(&cl, sock, !strcmp(role, "tunnel") ? KMESH__IPC__ROLE__ROLE_TUNNEL
				     : !strcmp(role, "cni") ? KMESH__IPC__ROLE__ROLE_CNI
							    : KMESH__IPC__ROLE__ROLE_ADMIN,
			    "kmesh-podsock", 5000, &code, msg, sizeof(msg)) != 0) {
		fprintf(stderr, "kmesh-podsock: hello: %s\n", msg);
		return 1;
	}
	cl.fds = fds;
	cl.fds_max = 64;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_POD_SOCKETS;
	req.pod_sockets = &ps;
	if (km_sync_call(&cl, &req, &rep) != 0 || !rep) {
		fprintf(stderr, "kmesh-podsock: no reply\n");
		return 1;
	}
	printf("reply %s applied %u: %s\n", km_msg_code_name(rep->reply->code), rep->reply->applied,
	       rep->reply->message ? rep->reply->message : "");
	rc = rep->reply->code == KMESH__IPC__CODE__OK && cl.n_fds == rep->reply->applied ? 0 : 1;
	for (size_t i = 0; i < cl.n_fds; i++) {
		uint64_t cookie = 0;
		socklen_t l = sizeof(cookie);
		int listening = 0;
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		getsockopt(fds[i], SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &l);
		l = sizeof(listening);
		getsockopt(fds[i], SOL_SOCKET, SO_ACCEPTCONN, &listening, &l);
		getsockname(fds[i], (struct sockaddr *)&ss, &sl);
		if (listening)
			printf("listener cookie %llu port %u\n", (unsigned long long)cookie,
			       ntohs(((struct sockaddr_in *)&ss)->sin_port));
		else
			printf("socket cookie %llu family %d\n", (unsigned long long)cookie,
			       ss.ss_family == AF_INET6 ? 6 : 4);
	}
	fflush(stdout);
	if (accept_one && cl.n_fds && wait_for(fds[0], POLLIN) == 0) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		int c = accept(fds[0], (struct sockaddr *)&from, &fl);

		if (c >= 0) {
			printf("accepted from %s\n", peer_text(&from, msg, sizeof(msg)));
			(void)!write(c, "hello\n", 6);
			close(c);
		}
	}
	if (connect_to && cl.n_fds) {
		int s = fds[cl.n_fds - 1];
		char host[64];
		unsigned port;
		struct sockaddr_in to = { .sin_family = AF_INET };
		struct sockaddr_storage me;
		socklen_t ml = sizeof(me);
		char line[128] = "";
		ssize_t n;

		if (sscanf(connect_to, "%63[^:]:%u", host, &port) != 2 ||
		    inet_pton(AF_INET, host, &to.sin_addr) != 1)
			goto usage;
		to.sin_port = htons((uint16_t)port);
		if (connect(s, (struct sockaddr *)&to, sizeof(to)) != 0 && errno != EINPROGRESS) {
			printf("connect: %s\n", strerror(errno));
			rc = 1;
		} else if (wait_for(s, POLLOUT) == 0 && getsockname(s, (struct sockaddr *)&me, &ml) == 0) {
			printf("connected from %s\n", peer_text(&me, msg, sizeof(msg)));
			if (wait_for(s, POLLIN) == 0 && (n = read(s, line, sizeof(line) - 1)) > 0) {
				line[n] = '\0';
				printf("read %s", line);
			}
		}
	}
	for (size_t i = 0; i < cl.n_fds; i++)
		close(fds[i]);
	km_msg_free(rep);
	km_sync_close(&cl);
	return rc;
usage:
	fprintf(stderr, "usage: kmesh-podsock --socket S --netns PATH|--cookie C [--role tunnel|cni|admin] "
			"[--listen PORT] [--connect N] [--family 4|6] [--accept] [--connect-to IP:PORT]\n");
	return 2;
}
