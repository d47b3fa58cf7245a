/* mw_calls.c — map writer requests on a lane (see mw_calls.h). */
#include "services/cni-agent/mw_calls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void work(struct km_lane_job *j)
{
	struct km_mw_call *call = (struct km_mw_call *)j;
	struct km_mw_calls *mw = call->mw;
	Kmesh__Ipc__Code code = KMESH__IPC__CODE__OK;
	km_envelope *req, *rep = NULL;
	char msg[256] = "";
	int rc;

	req = km_msg_unpack(call->req, call->req_len);
	if (!req) {
		call->code = KMESH__IPC__CODE__INTERNAL;
		snprintf(call->why, sizeof(call->why), "cannot unpack the request");
		return;
	}
	for (int attempt = 0; attempt < 2; attempt++) { /* a broken connection: once more */
		if (!mw->connected) {
			rc = km_sync_connect(&mw->cl, mw->socket, KMESH__IPC__ROLE__ROLE_CNI,
					     "kmesh-cni-agent", mw->timeout_ms, &code, msg, sizeof(msg));
			if (rc) {
				call->code = MW_UNREACHED;
				snprintf(call->why, sizeof(call->why), "%s at %s: %s%s%s",
					 mw->peer, mw->socket, strerror(-rc), *msg ? ": " : "", msg);
				break;
			}
			mw->connected = 1;
		}
		rc = km_sync_call(&mw->cl, req, &rep);
		if (rc == 0) {
			call->code = rep->reply->code;
			call->applied = rep->reply->applied;
			snprintf(call->why, sizeof(call->why), "%s: %s%s%s", mw->peer,
				 km_msg_code_name(rep->reply->code),
				 rep->reply->message && *rep->reply->message ? ": " : "",
				 rep->reply->message ? rep->reply->message : "");
			km_msg_free(rep);
			break;
		}
		km_sync_close(&mw->cl);
		mw->connected = 0;
		/* EPIPE/ECONNRESET on a connection the map writer closed meanwhile (it restarted):
		 * nothing was read by anyone, send again on a new one. A timeout may have been
		 * applied: say so. */
		if (rc != -EPIPE && rc != -ECONNRESET) {
			call->code = MW_NO_ANSWER;
			snprintf(call->why, sizeof(call->why), "%s at %s: %s (the request may "
				 "have been applied)", mw->peer, mw->socket, strerror(-rc));
			break;
		}
		call->code = MW_UNREACHED;
		snprintf(call->why, sizeof(call->why), "%s at %s: %s", mw->peer, mw->socket,
			 strerror(-rc));
	}
	km_msg_free(req);
}

static void done(struct km_lane_job *j)
{
	struct km_mw_call *call = (struct km_mw_call *)j;

	if (j->cancelled) {
		call->code = MW_UNREACHED;
		snprintf(call->why, sizeof(call->why), "the CNI agent is stopping");
	}
	free(call->req);
	call->req = NULL;
	call->done(call);
}

void km_mw_calls_init(struct km_mw_calls *mw, uv_loop_t *loop, const char *socket,
		      int timeout_ms)
{
	memset(mw, 0, sizeof(*mw));
	km_lane_init(&mw->lane, loop);
	mw->socket = socket;
	mw->peer = "map writer";
	mw->timeout_ms = timeout_ms;
}

void km_peer_calls_init(struct km_mw_calls *mw, uv_loop_t *loop, const char *socket,
			int timeout_ms, const char *peer)
{
	km_mw_calls_init(mw, loop, socket, timeout_ms);
	mw->peer = peer;
}

int km_mw_call(struct km_mw_calls *mw, const km_envelope *env, void (*cb)(struct km_mw_call *),
	       void *arg)
{
	struct km_mw_call *call = calloc(1, sizeof(*call));

	if (!call)
		return -1;
	call->req = km_msg_pack(env, &call->req_len);
	call->job.work = work;
	call->job.done = done;
	call->done = cb;
	call->arg = arg;
	call->mw = mw;
	if (!call->req || km_lane_push(&mw->lane, &call->job) != 0) {
		free(call->req);
		free(call);
		return -1;
	}
	return 0;
}

void km_mw_calls_stop(struct km_mw_calls *mw)
{
	km_lane_stop(&mw->lane);
	if (mw->connected && !mw->lane.running)
		km_sync_close(&mw->cl);
}
