/* msgbuf.h — buffers for large received messages whose consumed prefix is given back to the
 * kernel while the rest is still being read: a 20 MB push is applied front to back, so the
 * memory of the bytes already applied is released as the model grows, instead of the whole
 * message staying resident until its last resource. Large buffers are private anonymous
 * mappings (pages released with madvise); small ones are plain malloc. */
#ifndef KM_SHARED_MSGBUF_H
#define KM_SHARED_MSGBUF_H

#include <stddef.h>
#include <stdint.h>

/* At least len bytes (len 0 allowed), or NULL. */
uint8_t *km_msgbuf_alloc(size_t len);
/* Bytes [0, upto) will not be read again: release the whole pages among them. */
void km_msgbuf_release(uint8_t *buf, size_t len, size_t upto);
void km_msgbuf_free(uint8_t *buf, size_t len);

#endif
