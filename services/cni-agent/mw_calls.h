/* mw_calls.h — the CNI agent's requests to a daemon as role cni: the map writer (enroll,
 * unenroll, enroll query), and the tunnel (the enrolled pods, tunnel_feed.h); one at a time on
 * a lane (lane.h) over one connection per daemon, reconnected when it breaks. A request that
 * could not be sent says so (MW_UNREACHED: nothing was applied); one sent without an answer says
 * that (MW_NO_ANSWER: it may have been applied). */
#ifndef KM_CNI_MW_CALLS_H
#define KM_CNI_MW_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/client_sync.h"
#include "services/cni-agent/lane.h"

#define MW_UNREACHED (-1)
#define MW_NO_ANSWER (-2)

struct km_mw_calls {
	struct km_lane lane;
	struct km_sync_client cl; /* used in the lane's thread only */
	int connected;
	const char *socket;
	const char *peer; /* "map writer", "tunnel": in the whys */
	int timeout_ms;
};

struct km_mw_call {
	struct km_lane_job job;
	uint8_t *req;     /* a packed Envelope (km_msg_pack), freed after the call */
	size_t req_len;
	int code;         /* Kmesh__Ipc__Code, or MW_UNREACHED / MW_NO_ANSWER */
	uint32_t applied; /* the reply's */
	char why[400];
	void (*done)(struct km_mw_call *call); /* in the loop; owns call */
	void *arg;
	struct km_mw_calls *mw;
};

void km_mw_calls_init(struct km_mw_calls *mw, uv_loop_t *loop, const char *socket,
		      int timeout_ms);
/* The same, for another daemon than the map writer (peer names it in the whys). */
void km_peer_calls_init(struct km_mw_calls *mw, uv_loop_t *loop, const char *socket,
			int timeout_ms, const char *peer);
/* Queue env (packed now) and answer through done. Returns 0, or -1 when the lane is full or the
 * request cannot be packed (done is not called). */
int km_mw_call(struct km_mw_calls *mw, const km_envelope *env, void (*done)(struct km_mw_call *),
	       void *arg);
void km_mw_calls_stop(struct km_mw_calls *mw);

#endif
