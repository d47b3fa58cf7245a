/* h2_frames.h — the DATA frame length our HTTP/2 senders choose (nghttp2's
 * data_source_read_length_callback): as large as both windows and the peer's
 * SETTINGS_MAX_FRAME_SIZE allow, up to cap; nghttp2 alone would send 16 KiB frames. Used by the
 * tunnel's HBONE server (cap: a stream's buffer) and the HBONE bench client (ztunnel's 1 MiB). */
#ifndef KM_SHARED_H2_FRAMES_H
#define KM_SHARED_H2_FRAMES_H

#include <stdint.h>
#include <sys/types.h>

static inline ssize_t km_h2_frame_length(int32_t session_window, int32_t stream_window,
					 uint32_t remote_max_frame, uint32_t cap)
{
	int32_t w = session_window < stream_window ? session_window : stream_window;
	uint32_t n = remote_max_frame < cap ? remote_max_frame : cap;

	/* never below 1, the least nghttp2 takes (it asks only while a window is open) */
	return w < (int32_t)n ? (w > 0 ? w : 1) : (ssize_t)n;
}

#endif
