/* msgbuf.c — message buffers with releasable prefixes (see msgbuf.h). */
#include "shared/msgbuf.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAPPED_FROM (1u << 20) /* below this, releasing pages gains little */

uint8_t *km_msgbuf_alloc(size_t len)
{
	void *p;

	if (len < MAPPED_FROM)
		return malloc(len ? len : 1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void km_msgbuf_release(uint8_t *buf, size_t len, size_t upto)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!buf || len < MAPPED_FROM)
		return;
	if (upto > len)
		upto = len;
	upto -= upto % page; /* the mapping starts on a page: whole pages before upto */
	if (upto)
		madvise(buf, upto, MADV_DONTNEED);
}

void km_msgbuf_free(uint8_t *buf, size_t len)
{
	if (!buf)
		return;
	if (len < MAPPED_FROM)
		free(buf);
	else
		munmap(buf, len);
}
