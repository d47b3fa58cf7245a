/* fd_limit.c — raise and check the descriptor limit (see fd_limit.h). */
#include "shared/fd_limit.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "shared/log.h"

unsigned long km_fd_limit_raise(unsigned long need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		km_warn("cannot read the file descriptor limit: %s", strerror(errno));
		return 0;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t was = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
			km_warn("cannot raise the file descriptor limit to %llu: %s",
				(unsigned long long)rl.rlim_max, strerror(errno));
			rl.rlim_cur = was;
		}
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
		km_warn("the file descriptor limit is %llu, below the %lu this process may need "
			"(its connection limits and tables): raise it (systemd: LimitNOFILE=; a "
			"container: the runtime's nofile ulimit) or lower the connection limits",
			(unsigned long long)rl.rlim_cur, need);
	else
		km_debug("file descriptor limit %llu", (unsigned long long)rl.rlim_cur);
	return (unsigned long)rl.rlim_cur;
}
