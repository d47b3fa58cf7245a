/* atomic_file.c — see atomic_file.h. */
#include "shared/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/errbuf.h"

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int km_atomic_write(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
		    gid_t gid, unsigned flags, char *err, size_t errlen)
{
	return km_atomic_write_checked(path, data, len, mode, uid, gid, flags, NULL, NULL, err,
				       errlen);
}

int km_atomic_write_checked(const char *path, const void *data, size_t len, mode_t mode,
			    uid_t uid, gid_t gid, unsigned flags, int (*still_ok)(void *arg),
			    void *arg, char *err, size_t errlen)
{
	char dir[4096], base[256], tmp[4096 + 300];
	int fd, dfd, e;

	if (strlen(path) >= sizeof(dir))
		return km_errf(err, errlen, "path %.64s... too long", path);
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", basename(dir));
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(dir, sizeof(dir), "%s", dirname(dir));
	/* hidden and without the target's extension, so a directory scanner (a CNI runtime
	 * looking for *.conflist) never picks it up */
	snprintf(tmp, sizeof(tmp), "%s/.%s.kmesh-tmp-XXXXXX", dir, base);
	fd = mkstemp(tmp);
	if (fd < 0)
		return km_errf(err, errlen, "cannot create a temporary file in %s: %s", dir,
			       strerror(errno));
	if (write_all(fd, data, len) != 0 || fchmod(fd, mode) != 0 ||
	    ((uid != (uid_t)-1 || gid != (gid_t)-1) && fchown(fd, uid, gid) != 0) ||
	    (!(flags & KM_ATOMIC_NOSYNC) && fsync(fd) != 0)) {
		e = errno;
		close(fd);
		unlink(tmp);
		return km_errf(err, errlen, "cannot write %s: %s", tmp, strerror(e));
	}
	close(fd);
	if (still_ok && !still_ok(arg)) {
		unlink(tmp);
		errno = EAGAIN;
		return km_errf(err, errlen, "%s changed meanwhile; not replaced", path);
	}
	if (rename(tmp, path) != 0) {
		e = errno;
		unlink(tmp);
		return km_errf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(e));
	}
	if (flags & KM_ATOMIC_NOSYNC)
		return 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

long km_read_file(const char *path, size_t max, char **out, char *err, size_t errlen)
{
	size_t cap = 4096, n = 0;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;

	*out = NULL;
	if (fd < 0) {
		e = errno;
		km_errf(err, errlen, "cannot open %s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	buf = malloc(cap);
	for (;;) {
		ssize_t r;

		if (!buf) {
			close(fd);
			km_errf(err, errlen, "out of memory reading %s", path);
			errno = ENOMEM;
			return -1;
		}
		if (n + 1 >= cap) {
			/* n <= max here, so the buffer stays below 2 * (max + 1) */
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				close(fd);
				km_errf(err, errlen, "out of memory reading %s", path);
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			free(buf);
			close(fd);
			km_errf(err, errlen, "cannot read %s: %s", path, strerror(e));
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(buf);
			close(fd);
			km_errf(err, errlen, "%s is larger than %zu bytes", path, max);
			errno = EFBIG;
			return -1;
		}
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	return (long)n;
}
