/* frame.c — length-prefixed frame decoder and header encoder (see frame.h). */
#include "ipc/frame.h"

#include <stdlib.h>
#include <string.h>

void km_frame_decoder_init(struct km_frame_decoder *d, size_t max_frame)
{
	memset(d, 0, sizeof(*d));
	if (max_frame == 0 || max_frame > KM_FRAME_MAX_LIMIT)
		max_frame = KM_FRAME_MAX_DEFAULT;
	d->max_frame = max_frame;
}

void km_frame_decoder_set_max(struct km_frame_decoder *d, size_t max_frame)
{
	if (max_frame == 0 || max_frame > KM_FRAME_MAX_LIMIT)
		max_frame = KM_FRAME_MAX_DEFAULT;
	d->max_frame = max_frame;
}

void km_frame_decoder_set_budget(struct km_frame_decoder *d, struct km_frame_budget *budget)
{
	d->budget = budget;
}

static void body_release(struct km_frame_decoder *d)
{
	if (d->budget)
		d->budget->used -= d->body_cap;
	free(d->body);
	d->body = NULL;
	d->body_cap = 0;
}

void km_frame_decoder_free(struct km_frame_decoder *d)
{
	body_release(d);
	d->body_len = d->body_have = d->header_have = 0;
}

/* Room for `more` bytes past what the body holds: it grows with what arrives (an announced
 * length costs nothing until its bytes come), by doubling, within the budget. */
static int body_reserve(struct km_frame_decoder *d, size_t more)
{
	size_t want = d->body_have + more, cap = d->body_cap;
	uint8_t *p;

	if (want <= cap)
		return KM_FRAME_OK;
	cap = cap ? cap : KM_FRAME_BODY_STEP;
	while (cap < want)
		cap *= 2;
	if (cap > d->body_len)
		cap = d->body_len;
	if (d->budget && d->budget->used - d->body_cap + cap > d->budget->max)
		return KM_FRAME_EBUDGET;
	if (!(p = realloc(d->body, cap)))
		return KM_FRAME_ENOMEM;
	if (d->budget)
		d->budget->used += cap - d->body_cap;
	d->body = p;
	d->body_cap = cap;
	return KM_FRAME_OK;
}

void km_frame_header(uint8_t out[KM_FRAME_HEADER], uint32_t len)
{
	out[0] = (uint8_t)(len >> 24);
	out[1] = (uint8_t)(len >> 16);
	out[2] = (uint8_t)(len >> 8);
	out[3] = (uint8_t)len;
}

/* What a callback's answer means: go on (0), pause, or stop. */
static int after_cb(struct km_frame_decoder *d, int rc)
{
	if (rc == 0)
		return KM_FRAME_OK;
	if (rc == KM_FRAME_CB_PAUSE)
		return KM_FRAME_EPAUSED;
	return d->failed = KM_FRAME_ESTOPPED;
}

int km_frame_decoder_feed(struct km_frame_decoder *d, const uint8_t *data, size_t len,
			  km_frame_cb cb, void *arg)
{
	size_t used;
	int err = km_frame_decoder_feed_some(d, data, len, cb, arg, &used);

	/* a caller that cannot resume: a pause is a stop */
	return err == KM_FRAME_EPAUSED ? (d->failed = KM_FRAME_ESTOPPED) : err;
}

int km_frame_decoder_feed_some(struct km_frame_decoder *d, const uint8_t *data, size_t len,
			       km_frame_cb cb, void *arg, size_t *consumed)
{
	const uint8_t *start = data;
	int err;

	*consumed = 0;
	if (d->failed)
		return d->failed;
	while (len > 0) {
		if (d->header_have < KM_FRAME_HEADER) {
			size_t take = KM_FRAME_HEADER - d->header_have;

			if (take > len)
				take = len;
			memcpy(d->header + d->header_have, data, take);
			d->header_have += take;
			data += take;
			len -= take;
			if (d->header_have < KM_FRAME_HEADER)
				break;
			d->body_len = ((size_t)d->header[0] << 24) | ((size_t)d->header[1] << 16) |
				      ((size_t)d->header[2] << 8) | d->header[3];
			if (d->body_len == 0)
				return d->failed = KM_FRAME_EEMPTY;
			if (d->body_len > d->max_frame)
				return d->failed = KM_FRAME_ETOOBIG;
			d->body_have = 0;
			/* Whole frame already in this chunk: deliver in place, no copy. */
			if (len >= d->body_len) {
				size_t n = d->body_len;

				d->header_have = 0;
				err = after_cb(d, cb(arg, data, n));
				data += n;
				len -= n;
				if (err) {
					*consumed = (size_t)(data - start);
					return err;
				}
				continue;
			}
			if (!len)
				break; /* the body comes with a later read */
		}
		size_t take = d->body_len - d->body_have;

		if (take > len)
			take = len;
		if ((err = body_reserve(d, take)))
			return d->failed = err;
		memcpy(d->body + d->body_have, data, take);
		d->body_have += take;
		data += take;
		len -= take;
		if (d->body_have == d->body_len) {
			struct km_frame_budget *budget = d->budget;
			uint8_t *body = d->body;
			size_t cap = d->body_cap;
			int stop;

			/* detached first: the receiver may free the decoder's buffers */
			d->body = NULL;
			d->body_cap = 0;
			d->header_have = 0;
			stop = cb(arg, body, d->body_len);
			free(body);
			if (budget)
				budget->used -= cap;
			if ((err = after_cb(d, stop))) {
				*consumed = (size_t)(data - start);
				return err;
			}
		}
	}
	*consumed = (size_t)(data - start);
	return KM_FRAME_OK;
}

const char *km_frame_strerror(int err)
{
	switch (err) {
	case KM_FRAME_OK:
		return "ok";
	case KM_FRAME_ETOOBIG:
		return "frame larger than the maximum frame size";
	case KM_FRAME_EEMPTY:
		return "zero-length frame";
	case KM_FRAME_ENOMEM:
		return "out of memory";
	case KM_FRAME_ESTOPPED:
		return "stopped by the receiver";
	case KM_FRAME_EPAUSED:
		return "paused by the receiver";
	case KM_FRAME_EBUDGET:
		return "too many bytes of unfinished frames buffered in this process";
	}
	return "unknown framing error";
}
